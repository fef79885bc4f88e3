"""The errors tl_backend_api raises: each says what was expected, what came, and what to do."""

from __future__ import annotations


class BackendError(Exception):
    """Base class of every error raised by the backend contract and its registry."""


class BackendValidationError(BackendError, ValueError):
    """A `Backend` or `ExecutionBackendSpec` was constructed with invalid fields."""


class TargetError(BackendError, ValueError):
    """A target could not be normalized into a `tvm.target.Target`."""


class BackendConflictError(BackendError):
    """Registering a backend would clash with one already registered.

    Raised for a different descriptor under a taken name (without
    ``override=True``) and for two backends sharing a target kind where not
    all of them define ``supports_target``.
    """


class BackendNotFoundError(BackendError, LookupError):
    """No registered backend serves the requested target (or name)."""


class AmbiguousBackendError(BackendError, LookupError):
    """Several backends accept the same target; the message names them."""


class PluginImportError(BackendError, ImportError):
    """A ``tl.backends`` entry point failed to load; the message names its package."""


class ExecutionBackendError(BackendError, ValueError):
    """An execution backend name is unknown for the target (or is the removed ``ctypes``)."""


class ExecutionBackendUnavailableError(BackendError, RuntimeError):
    """The requested execution backend exists but its availability probe said no."""


class ToolchainError(BackendError, RuntimeError):
    """A compiler or other toolchain step failed.

    Attributes:
        command: the command line that ran (empty when none ran).
        output: the tool's own message (stderr and stdout).
        source_path: the source file it failed on, when known.
    """

    def __init__(
        self,
        message: str,
        *,
        command: tuple[str, ...] = (),
        output: str = "",
        source_path: str | None = None,
    ) -> None:
        super().__init__(message)
        self.command = command
        self.output = output
        self.source_path = source_path

    def __str__(self) -> str:
        parts = [str(self.args[0]) if self.args else "toolchain step failed"]
        if self.source_path:
            parts.append(f"source: {self.source_path}")
        if self.command:
            parts.append("command: " + " ".join(self.command))
        if self.output:
            parts.append("tool output:\n" + self.output.rstrip())
        return "\n".join(parts)
