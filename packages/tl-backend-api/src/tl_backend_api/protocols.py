"""The Protocols every backend implements, and the value types they return.

These are the whole contract between the engine (tl_jit) and a backend:
every member the engine calls is declared here with its types. Codegen
packages and tl_jit exchange the frozen value types below.
"""

from __future__ import annotations

import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import attrs
from tvm import IRModule
from tvm.target import Target

from tl_backend_api.errors import BackendValidationError

# One name rule for stages, hooks and pipelines (re-exported: conformance uses it).
from tl_passes import is_kebab_case as is_kebab_case


def _frozen_text_files(value: Mapping[str, str]) -> Mapping[str, str]:
    if not isinstance(value, Mapping):
        raise BackendValidationError(
            f"files: expected a mapping of file name to text, got {type(value).__name__}"
        )
    copied = dict(value)
    for name, text in copied.items():
        if not isinstance(name, str) or not name or "/" in name or "\\" in name:
            raise BackendValidationError(
                f"files: expected plain file names (no directories), got {name!r}"
            )
        if not isinstance(text, str):
            raise BackendValidationError(
                f"files[{name!r}]: expected source text (str), got {type(text).__name__}"
            )
    return types.MappingProxyType(copied)


def _frozen_binary_files(value: Mapping[str, bytes]) -> Mapping[str, bytes]:
    if not isinstance(value, Mapping):
        raise BackendValidationError(
            f"binaries: expected a mapping of file name to bytes, got {type(value).__name__}"
        )
    copied = dict(value)
    for name, blob in copied.items():
        if not isinstance(name, str) or not name or "/" in name or "\\" in name:
            raise BackendValidationError(
                f"binaries: expected plain file names (no directories), got {name!r}"
            )
        if not isinstance(blob, bytes):
            raise BackendValidationError(
                f"binaries[{name!r}]: expected bytes, got {type(blob).__name__}"
            )
    return types.MappingProxyType(copied)


def _frozen_str_map(value: Mapping[str, str]) -> Mapping[str, str]:
    if not isinstance(value, Mapping):
        raise BackendValidationError(f"expected a mapping of str to str, got {type(value)}")
    return types.MappingProxyType({str(k): str(v) for k, v in value.items()})


def _dims(value: Sequence[int | str]) -> tuple[int | str, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise BackendValidationError(
            f"launch dims: expected a sequence of ints or expressions, got {value!r}"
        )
    dims = tuple(value)
    for dim in dims:
        if isinstance(dim, bool) or not isinstance(dim, (int, str)):
            raise BackendValidationError(
                f"launch dims: expected int or expression text per dim, got {dim!r}"
            )
    return dims


#: The kinds of device kernel argument (`KernelArgument.kind`).
KERNEL_ARGUMENT_KINDS = ("buffer", "scalar", "dim", "workspace")


@attrs.frozen
class KernelArgument:
    """One parameter of a device kernel, as its launcher passes it.

    Attributes:
        kind: ``"buffer"`` (the data pointer of the tensor parameter ``name``),
            ``"scalar"`` (the value of the scalar parameter ``name``), ``"dim"`` (the
            value of the symbolic dim ``name``) or ``"workspace"`` (device memory of
            ``nbytes`` the launcher allocates for the call: a ``T.alloc_global`` buffer
            shared by the call's kernels).
        name: the parameter's, dim's or workspace buffer's name.
        dtype: the element dtype (buffers, workspaces) or the value's dtype.
        nbytes: a workspace's size in bytes (an int or an expression over symbolic
            dims); None for the other kinds.

    Raises:
        BackendValidationError: an unknown kind, an empty name or dtype, or ``nbytes``
            missing on a workspace or given for another kind.
    """

    kind: str
    name: str
    dtype: str
    nbytes: int | str | None = None

    def __attrs_post_init__(self) -> None:
        if self.kind not in KERNEL_ARGUMENT_KINDS:
            raise BackendValidationError(
                f"KernelArgument.kind: expected one of {KERNEL_ARGUMENT_KINDS}, got {self.kind!r}"
            )
        for field in ("name", "dtype"):
            if not isinstance(getattr(self, field), str) or not getattr(self, field):
                raise BackendValidationError(
                    f"KernelArgument.{field}: expected a non-empty str, got {getattr(self, field)!r}"
                )
        if (self.kind == "workspace") != (self.nbytes is not None):
            raise BackendValidationError(
                f"KernelArgument {self.name!r}.nbytes: expected a size for a workspace and "
                f"none for a {self.kind}, got {self.nbytes!r}"
            )


def _arguments(value: Sequence[KernelArgument]) -> tuple[KernelArgument, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise BackendValidationError(
            f"arguments: expected a sequence of KernelArgument, got {value!r}"
        )
    arguments = tuple(value)
    for argument in arguments:
        if not isinstance(argument, KernelArgument):
            raise BackendValidationError(
                f"arguments: expected KernelArgument items, got {type(argument).__name__}"
            )
    return arguments


@attrs.frozen
class KernelLaunch:
    """How one device kernel is launched (GPU targets): what `build_artifact` writes to
    the manifest's ``launches``.

    Attributes:
        kernel_name: the device function's symbol.
        grid: grid dims, each an int or an expression over symbolic params.
        block: block (thread) dims, same form.
        dynamic_shared_memory_bytes: int or expression; 0 when none.
        arguments: the device function's parameters, in order.
    """

    kernel_name: str
    grid: tuple[int | str, ...] = attrs.field(converter=_dims)
    block: tuple[int | str, ...] = attrs.field(converter=_dims)
    dynamic_shared_memory_bytes: int | str = 0
    arguments: tuple[KernelArgument, ...] = attrs.field(default=(), converter=_arguments)


def _launches(value: Sequence[KernelLaunch]) -> tuple[KernelLaunch, ...]:
    launches = tuple(value)
    for launch in launches:
        if not isinstance(launch, KernelLaunch):
            raise BackendValidationError(
                f"launches: expected KernelLaunch items, got {type(launch).__name__}"
            )
    return launches


@attrs.frozen
class KernelSources:
    """Generated source code: the result of `DeviceCodegen.emit_source`.

    Attributes:
        language: what the files hold: ``"c"``, ``"llvm-ir"``, ``"cuda"``,
            ``"hip"``, ``"metal"``, ``"wgsl"``, ``"opencl"``...
        files: file name -> source text (read-only copy).
        entry_symbol: the symbol the host calls.
        launches: every device kernel's launch, in launch order (empty on CPU targets).
    """

    language: str
    files: Mapping[str, str] = attrs.field(converter=_frozen_text_files)
    entry_symbol: str
    launches: tuple[KernelLaunch, ...] = attrs.field(default=(), converter=_launches)

    def __attrs_post_init__(self) -> None:
        if not self.language:
            raise BackendValidationError("language: expected a non-empty name, got ''")
        if not self.entry_symbol:
            raise BackendValidationError("entry_symbol: expected a non-empty symbol, got ''")

    @property
    def kernel_source(self) -> str:
        """The first source file's text (the device kernel's; on a CPU target the one
        file): TileLang's ``tilelang.lower(func).kernel_source``.

        Raises:
            LookupError: there is no source file.
        """
        for text in self.files.values():
            return text
        raise LookupError("kernel_source: these sources hold no file")


@attrs.frozen
class DeviceBuildResult:
    """The result of `DeviceCodegen.build` (or of the source-only path).

    Attributes:
        sources: the generated sources the binaries were built from.
        binaries: file name -> bytes (a shared object, a cubin...); empty
            when the source-only path ran and no compiler was invoked.
        toolchain_versions: tool name -> version of every tool that ran.
    """

    sources: KernelSources
    binaries: Mapping[str, bytes] = attrs.field(factory=dict, converter=_frozen_binary_files)
    toolchain_versions: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_str_map)

    @property
    def compiled(self) -> bool:
        """True when a compiler produced binaries (false on the source-only path)."""
        return bool(self.binaries)

    @property
    def entry_symbol(self) -> str:
        """The symbol the host calls (from the sources)."""
        return self.sources.entry_symbol


@attrs.frozen
class ToolchainInfo:
    """A discovered tool: its name, the executable found and its version text."""

    name: str
    executable: str
    version: str


@runtime_checkable
class PassPipeline(Protocol):
    """A backend's lowering: an ordered list of named stages over an `IRModule`.

    Stage names are kebab-case and unique; they name IR dumps
    (``NN-<stage>.tir``) so compilation can be inspected, or started and
    stopped, at any stage.
    """

    @property
    def name(self) -> str:
        """The pipeline's name (kebab-case)."""
        ...

    @property
    def stage_names(self) -> tuple[str, ...]:
        """The stages' names, in the order they run."""
        ...

    def run(
        self,
        mod: IRModule,
        target: Target,
        *,
        dump_dir: Path | None = None,
        start: str | None = None,
        stop: str | None = None,
    ) -> IRModule:
        """Apply the stages in order and return the lowered module.

        Args:
            mod: the module to lower (not modified).
            target: the normalized target.
            dump_dir: when given, the IR after each stage is written there.
            start: first stage to run (by name); default the first.
            stop: last stage to run (by name, inclusive); default the last.

        Raises:
            ValueError: ``start``/``stop`` name no stage, or ``stop`` precedes ``start``.
        """
        ...


@runtime_checkable
class DeviceCodegen(Protocol):
    """Turns a lowered module into device code for one target kind."""

    def emit_source(self, mod: IRModule, target: Target) -> KernelSources:
        """Generate source only. Never invokes a compiler or needs a device."""
        ...

    def build(self, mod: IRModule, target: Target) -> DeviceBuildResult:
        """Generate source and compile it.

        Raises:
            ToolchainError: the compiler failed; carries its message and the source path.
        """
        ...


@runtime_checkable
class Toolchain(Protocol):
    """A compiler the backend drives: discovery, version, compile to a shared object."""

    @property
    def name(self) -> str:
        """The tool's name (``"gcc"``, ``"nvcc"``...)."""
        ...

    def discover(self) -> ToolchainInfo | None:
        """Find the tool; None when it is not installed. Never raises for absence."""
        ...

    def compile_shared_object(
        self,
        sources: Sequence[Path],
        output: Path,
        *,
        options: Sequence[str] = (),
    ) -> Path:
        """Compile ``sources`` into the shared object ``output`` and return its path.

        Raises:
            ToolchainError: the tool is missing or failed (its own message and the source path).
        """
        ...
