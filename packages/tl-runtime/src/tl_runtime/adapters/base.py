"""What every execution adapter provides, and the pieces they share."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tl_runtime.checking import ArgumentChecker
from tl_runtime.errors import ArtifactError
from tl_runtime.library_bounds import refuse_incomplete_library
from tl_runtime.manifest import Manifest

CallFunction = Callable[..., Any]
"""An adapter's call path: ``call(*args)`` with the caller's arguments; returns None, one
output or a tuple of outputs."""


@dataclass(frozen=True)
class Availability:
    """Whether an adapter can run here; ``reason`` says why not (empty when available)."""

    available: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.available


class Adapter(Protocol):
    """What an execution adapter provides: the class an entry point of ``tl.adapters`` names.

    ``tl_runtime.load`` finds the class by key (``get_adapter``), asks ``probe()``, builds
    the kernel's ``ArgumentChecker`` from the manifest, constructs the adapter with
    ``(manifest, directory, checker)`` and calls what ``make_call()`` returned on every
    kernel call.

    Contract:
        key: class attribute; the adapter key. It equals the entry-point name, the
            ``execution.adapter`` of the manifests the adapter loads, and the ``adapter``
            of the backend's execution-backend spec.
        probe(): classmethod; whether the adapter can run on this machine, with the reason
            when not. Cheap, imports nothing heavy, loads no library, never raises.
        __init__(manifest, directory, checker): load ``directory / manifest.library`` (its
            sha256 is already verified) and resolve the entry. ``checker`` accepts arrays on
            the DLPack device types of ``manifest.argument_device_types``. Raise
            ``ArtifactError`` for an artifact the adapter cannot use (naming the file or
            field), ``AdapterUnavailableError`` for something missing on this machine.
        make_call(): return the call function, called as ``call(*args)`` with the caller's
            arguments (``out_idx`` parameters left out). It validates them with
            ``checker.prepare(args)`` (which raises the documented ``TypeError``/``ValueError``
            and allocates outputs), or skips only checks it has proven redundant for the
            arguments at hand; launches; returns ``pack_result(prepared.outputs)``. A kernel
            failure is a Python exception, never a crash.
    """

    key: str

    def __init__(self, manifest: Manifest, directory: Path, checker: ArgumentChecker) -> None: ...

    @classmethod
    def probe(cls) -> Availability:
        """Return whether the adapter can run on this machine (never raises)."""
        ...

    def make_call(self) -> CallFunction:
        """Return the call path (built once; the Kernel calls it with the caller's args)."""
        ...


def pack_result(outputs: Sequence[Any]) -> Any:
    """Return what a kernel call returns for its allocated ``out_idx`` outputs.

    Args:
        outputs: ``PreparedCall.outputs`` (the allocated outputs, in ``out_idx`` order).

    Returns:
        None for no outputs, the array itself for one, a tuple for several.
    """
    if not outputs:
        return None
    if len(outputs) == 1:
        return outputs[0]
    return tuple(outputs)


def load_tvm_ffi_library(manifest: Manifest, directory: Path) -> tuple[Any, Any]:
    """Load the artifact's library through tvm-ffi (context symbols registered first).

    Returns:
        ``(module, function)``: the tvm-ffi Module and the packed entry function.

    Raises:
        ArtifactError: the library cannot be loaded or lacks the entry symbol.
    """
    import tvm_ffi

    from tl_runtime.context import ensure_context_symbols

    ensure_context_symbols()
    path = directory / manifest.library
    refuse_incomplete_library(manifest.library, path)
    try:
        module = tvm_ffi.load_module(str(path))
    except Exception as exc:
        raise ArtifactError(f"cannot load library {manifest.library!r}: {exc}") from None
    try:
        function = module.get_function(manifest.entry_symbol)
    except Exception:
        function = None
    if function is None:
        raise ArtifactError(
            f"library {manifest.library!r} has no entry {manifest.entry_symbol!r} "
            "(manifest kernel.entry_symbol)"
        )
    return module, function
