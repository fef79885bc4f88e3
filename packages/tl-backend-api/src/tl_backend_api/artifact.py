"""Building a tl-runtime artifact from a kernel: lower, build, describe, write.

`build_artifact` is what `tl_jit` calls to compile: it lowers the kernel
through the context's pipeline, builds it with the context's device
codegen (or only generates source for a source-only execution backend),
derives every manifest parameter from the PrimFunc and writes the artifact
atomically with `tl_runtime.write_artifact`. `lower_to_sources` stops after
source generation and never runs a compiler.
"""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import tvm
from tvm import IRModule, tirx

from tl_backend_api.context import BackendContext, offered_execution_backends
from tl_backend_api.protocols import DeviceBuildResult, KernelSources
from tl_backend_api.written_params import written_buffers
from tl_runtime.out_idx import normalize_out_idx

#: Distributions whose versions every artifact records (when installed).
VERSIONED_DISTRIBUTIONS: tuple[str, ...] = (
    "tl-ir",
    "tl-passes",
    "tl-backend-api",
    "tl-runtime",
    "apache-tvm",
    "apache-tvm-ffi",
)

_TVM_FFI_PREFIX = "__tvm_ffi_"


def _check_func(func: object, caller: str) -> tirx.PrimFunc:
    if not isinstance(func, tirx.PrimFunc):
        raise TypeError(f"{caller} func: expected a tvm.tirx.PrimFunc, got {type(func).__name__}")
    return func


def kernel_symbol(func: tirx.PrimFunc, kernel_name: str | None = None) -> str:
    """The kernel's name: ``kernel_name``, else the PrimFunc's global symbol, else ``main``.

    Raises:
        ValueError: ``kernel_name`` is not a C identifier.
    """
    if kernel_name is None:
        symbol = func.attrs.get("global_symbol") if func.attrs is not None else None
        kernel_name = str(symbol) if symbol is not None else "main"
    if not kernel_name.isidentifier() or kernel_name.startswith(_TVM_FFI_PREFIX):
        raise ValueError(f"kernel_name: expected a C identifier, got {kernel_name!r}")
    return kernel_name


def kernel_module(func: tirx.PrimFunc, kernel_name: str) -> IRModule:
    """An IRModule holding ``func`` under ``kernel_name`` (its global symbol set to it)."""
    return IRModule({kernel_name: func.with_attr("global_symbol", kernel_name)})


def _dim(value: Any, param: str) -> int | str:
    if isinstance(value, tirx.IntImm):
        return int(value.value)
    if isinstance(value, tvm.ir.Var):
        return str(value.name)
    raise ValueError(
        f"parameter {param!r}: expected every dim to be a constant or a symbolic dim "
        f"(T.symbolic), got the expression {value}"
    )


def param_specs(func: tirx.PrimFunc, out_idx: Sequence[int] = ()) -> tuple[Any, ...]:
    """The `tl_runtime.ParamSpec` of every parameter of ``func``, in order.

    Buffer parameters give name, dtype, shape (ints and symbolic dim names) and
    ``alignment`` (the buffer's ``data_alignment``: the byte alignment the generated
    code assumes); scalar parameters give name and dtype. Parameters in ``out_idx``
    get role ``output``; other buffer parameters the kernel writes (`written_buffers`)
    get role ``inout``, the rest ``input``.

    Raises:
        ValueError: a dim that is an expression rather than a constant or a Var; an
            ``out_idx`` parameter that is a scalar or that the kernel never writes.
    """
    from tl_runtime import ParamSpec

    written = written_buffers(func)
    specs = []
    for position, param in enumerate(func.params):
        name = str(param.name)
        ty = param.ty
        if isinstance(ty, tirx.BufferType):
            if position in out_idx:
                if not any(param.same_as(buffer) for buffer in written):
                    raise ValueError(
                        f"out_idx: parameter {position} ({name!r}) is never written by the "
                        "kernel: the runtime would allocate it and return it uninitialised "
                        "(and the kernel would read that garbage); list only parameters the "
                        "kernel writes"
                    )
                role = "output"
            elif any(param.same_as(buffer) for buffer in written):
                role = "inout"
            else:
                role = "input"
            specs.append(
                ParamSpec(
                    name=name,
                    dtype=str(ty.dtype),
                    shape=tuple(_dim(d, name) for d in ty.shape),
                    # Declared element strides (T.StridedTensor); none: C-contiguous.
                    strides=tuple(_dim(s, name) for s in ty.strides) if len(ty.strides) else None,
                    role=role,
                    alignment=int(ty.data_alignment),
                )
            )
        else:
            if position in out_idx:
                raise ValueError(f"out_idx: parameter {position} ({name!r}) is a scalar")
            specs.append(ParamSpec(name=name, dtype=str(ty.dtype), kind="scalar"))
    bound = {s for k, spec in enumerate(specs) if k not in out_idx for s in spec.symbols}
    for k in out_idx:
        unbound = sorted(set(specs[k].symbols) - bound)
        if unbound:
            scalars = {spec.name for spec in specs if spec.kind == "scalar"}
            how = (
                f"{unbound[0]!r} is a scalar parameter, which cannot size an output the "
                "runtime allocates"
                if unbound[0] in scalars
                else f"no input tensor's shape gives {unbound[0]!r}"
            )
            raise ValueError(
                f"output {specs[k].name!r} (out_idx {k}, or T.empty in an eager kernel) has "
                f"dims {list(specs[k].shape)}: {how}; size it from an input tensor's shape or "
                "constants, or pass it as an argument"
            )
    return tuple(specs)


def with_argument_alignment(params: tuple[Any, ...], alignment: int) -> tuple[Any, ...]:
    """``params`` with every tensor's alignment raised to at least ``alignment`` bytes.

    A backend's generated code may assume more of an argument's base address
    than its buffer declares (`Backend.argument_alignment`: GPU code moves
    global tiles in 16-byte vectors); the manifest records what it assumes,
    so the runtime checks (or copies) arrays against that.
    """
    import dataclasses

    return tuple(
        dataclasses.replace(p, alignment=max(p.alignment, alignment)) if p.kind == "tensor" else p
        for p in params
    )


def _target_json(context: BackendContext) -> dict[str, Any]:
    target = context.target
    out: dict[str, Any] = {"kind": context.target_kind}
    for key, value in target.attrs.items():
        if isinstance(value, (bool, int, float)):
            out[str(key)] = value
        elif (isinstance(value, str) or type(value).__name__ == "String") and str(value):
            out[str(key)] = str(value)
    return out


def _versions(build: DeviceBuildResult, extra: Mapping[str, str] | None) -> dict[str, str]:
    versions: dict[str, str] = {}
    for dist in VERSIONED_DISTRIBUTIONS:
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    versions.update({f"toolchain.{k}": v for k, v in build.toolchain_versions.items()})
    versions.update(dict(extra or {}))
    return versions


#: The PrimFunc attribute a backend's passes set to the bytes of arrays one block keeps
#: on its thread's stack; the manifest records the largest as ``stack_bytes``.
STACK_BYTES_ATTR = "tl.stack_bytes"


def _stack_bytes(lowered: IRModule) -> int:
    needs = [
        int(func.attrs[STACK_BYTES_ATTR])
        for func in lowered.functions.values()
        if isinstance(func, tirx.PrimFunc) and func.attrs and STACK_BYTES_ATTR in func.attrs
    ]
    return max(needs, default=0)


def manifest_launches(sources: KernelSources) -> tuple[Any, ...]:
    """The manifest's ``launches``: one `tl_runtime.LaunchSpec` per `KernelLaunch` of
    ``sources``, in launch order, with its device arguments (empty on host targets).

    Raises:
        tl_runtime.ArtifactError: a launch the manifest cannot hold (names the field).
    """
    from tl_runtime import LaunchArgument, LaunchSpec

    return tuple(
        LaunchSpec(
            symbol=launch.kernel_name,
            grid=launch.grid or (1,),
            block=launch.block or (1,),
            dynamic_shared_memory=launch.dynamic_shared_memory_bytes,
            arguments=tuple(
                LaunchArgument(argument.kind, argument.name, argument.dtype, argument.nbytes)
                for argument in launch.arguments
            ),
        )
        for launch in sources.launches
    )


def runnable_with(context: BackendContext) -> tuple[str, ...]:
    """The context backend's execution backends that name an adapter and are offered
    for its target, in ``"auto"`` order: what would make an artifact that runs."""
    return tuple(
        spec.name
        for spec in offered_execution_backends(context.backend, context.target)
        if spec.adapter is not None
    )


def lower_to_sources(
    context: BackendContext, func: tirx.PrimFunc, *, dump_dir: Path | None = None
) -> KernelSources:
    """Lower ``func`` through the context's pipeline and generate its source (no compiler).

    Raises:
        TypeError: ``func`` is not a PrimFunc.
        tl_ir.errors.TileLangError: a construct the target cannot lower.
        ToolchainError: TVM's code generation failed.
    """
    func = _check_func(func, "lower_to_sources")
    mod = kernel_module(func, kernel_symbol(func))
    return context.emit_source(context.lower(mod, dump_dir=dump_dir))


def build_artifact(
    context: BackendContext,
    func: tirx.PrimFunc,
    directory: str | os.PathLike[str],
    *,
    out_idx: int | Sequence[int] | None = None,
    kernel_name: str | None = None,
    dump_dir: Path | None = None,
    extra_versions: Mapping[str, str] | None = None,
) -> Path:
    """Compile ``func`` for the context's target and write a tl-runtime artifact.

    Args:
        context: the resolved backend, target and execution backend.
        func: the kernel as `tl_ir.language` produced it (tile ops, ``T.Kernel``).
        directory: where the artifact goes; created if missing, must be empty.
        out_idx: parameters the runtime allocates and returns (negative allowed).
        kernel_name: the entry's name (default: the global symbol, else ``main``).
        dump_dir: IR dumps after every pass (``TL_DUMP_IR`` works too).
        extra_versions: merged into the manifest's versions.

    Returns:
        The artifact directory, loadable with ``tl_runtime.load``.

    Raises:
        TypeError, ValueError: a bad argument (named in the message).
        FileExistsError: ``directory`` exists and is not an empty directory.
        tl_ir.errors.TileLangError: a construct the target cannot lower.
        ToolchainError: code generation or the compiler failed.
    """
    from tl_runtime import Manifest, write_artifact

    func = _check_func(func, "build_artifact")
    root = Path(directory)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise FileExistsError(f"directory: expected an empty or absent directory, got {root}")
    name = kernel_symbol(func, kernel_name)
    outputs = normalize_out_idx(out_idx, len(func.params))
    params = param_specs(func, outputs)
    lowered = context.lower(kernel_module(func, name), dump_dir=dump_dir)
    build = context.build(lowered)
    params = with_argument_alignment(params, context.backend.argument_alignment)
    files: dict[str, bytes] = {}
    roles: dict[str, str] = {}
    for file_name, blob in build.binaries.items():
        files[file_name] = blob
        roles[file_name] = "library"
    for file_name, text in build.sources.files.items():
        files[file_name] = text.encode("utf-8")
        roles.setdefault(file_name, "source")
    library = next(iter(build.binaries), None) or next(iter(build.sources.files))
    entry = build.entry_symbol
    if entry.startswith(_TVM_FFI_PREFIX):
        entry = entry[len(_TVM_FFI_PREFIX) :]
    manifest = Manifest(
        name=name,
        entry_symbol=entry,
        params=params,
        target=_target_json(context),
        library=library,
        out_idx=outputs,
        execution_backend=context.execution_backend.name,
        adapter=context.adapter,
        # A source-only artifact says what would run it (tl_runtime.load's error names it).
        runnable_with=runnable_with(context) if context.adapter is None else (),
        launches=manifest_launches(build.sources),
        versions=_versions(build, extra_versions),
        argument_device_types=context.backend.argument_device_types,
        stack_bytes=_stack_bytes(lowered),
    )
    return write_artifact(root, manifest, files, roles=roles)
