"""GPU code generation: device source from a GPU-lowered module through TVM's codegens,
without a device.

After the ``gpu-*`` passes (``tl_passes.gpu``), `build_device_module` runs TVM's own lowering
(``BindTarget``, the ``s_tir`` pipeline, host/device split, device
finalization) and calls ``target.build.<kind>`` directly: TVM keeps the
device source text (CUDA C, Metal, WGSL) or, for ROCm, LLVM IR and AMDGPU
assembly. No compiler runs. It also gathers what a launcher needs per
kernel: the device symbol, grid and block extents as expressions over the
kernel's symbolic dims (from the ``T.Kernel`` launch, before TVM rewrites
them), dynamic shared memory bytes (``gpu-plan-shared-memory``) and the
device parameters in order, each tied to a kernel parameter or symbolic dim.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_backend_api.tvm_lowering import sound_lowering
from tl_ir import scopes
from tl_passes.gpu import DYNAMIC_SHARED_ATTR, KERNEL_SHARED_ATTR
from tl_passes.whole_tiles import keep_data_indexed_tiles_whole


class DeviceBuildError(RuntimeError):
    """TVM's device lowering or code generation failed (its message is kept)."""


@dataclass(frozen=True)
class DeviceArgument:
    """One parameter of a device kernel.

    Attributes:
        kind: ``"buffer"`` (a data pointer), ``"scalar"`` (a scalar kernel
            parameter), ``"dim"`` (the value of a symbolic dim) or ``"workspace"``
            (the data pointer of a ``T.alloc_global`` buffer: device memory of
            ``nbytes`` the launcher allocates for the call, shared by the call's
            kernels, contents undefined at the start).
        name: the kernel parameter's name (``buffer``/``scalar``), the dim's name
            or the workspace buffer's name.
        dtype: element dtype (buffers, workspaces) or value dtype.
        nbytes: the workspace's size in bytes (an int or an expression over
            symbolic dims); None for the other kinds.
    """

    kind: str
    name: str
    dtype: str
    nbytes: int | str | None = None

    def to_json(self) -> dict[str, str | int]:
        """A JSON-compatible dict (``nbytes`` only for workspaces)."""
        out: dict[str, str | int] = {"kind": self.kind, "name": self.name, "dtype": self.dtype}
        if self.nbytes is not None:
            out["nbytes"] = self.nbytes
        return out


@dataclass(frozen=True)
class DeviceKernel:
    """A device kernel and its launch.

    Attributes:
        symbol: the device function's symbol.
        grid: grid extents (ints or expressions over symbolic dims).
        block: block extents (ints).
        dynamic_shared_memory: bytes of dynamic shared memory.
        arguments: the device parameters, in order.
    """

    symbol: str
    grid: tuple[int | str, ...]
    block: tuple[int | str, ...]
    dynamic_shared_memory: int
    arguments: tuple[DeviceArgument, ...]


@dataclass(frozen=True)
class DeviceModule:
    """The device side of one kernel module.

    Attributes:
        sources: format -> text (``""`` the primary source; ``"asm"``, ``"ll"`` on ROCm).
        kernels: the device kernels, in launch order (several when the function has
            consecutive ``T.Kernel`` launches).
    """

    sources: Mapping[str, str]
    kernels: tuple[DeviceKernel, ...]


_BINARY = {
    "Add": "+",
    "Sub": "-",
    "Mul": "*",
    "FloorDiv": "//",
    "FloorMod": "%",
    "Div": "//",
}


def dim_expression(expr: Any) -> int | str:
    """An extent as an int, or as text the runtime evaluates (ints, names, ``+ - * // %``,
    parentheses, ``min``/``max``).

    Raises:
        DeviceBuildError: the expression uses something else.
    """
    if isinstance(expr, int):
        return expr
    if isinstance(expr, tirx.IntImm):
        return int(expr.value)
    return _text(expr)


def _text(expr: Any) -> str:
    kind = type(expr).__name__
    if isinstance(expr, tirx.IntImm):
        return str(int(expr.value))
    if isinstance(expr, tvm.ir.Var):
        return str(expr.name)
    if kind in _BINARY:
        return f"({_text(expr.a)} {_BINARY[kind]} {_text(expr.b)})"
    if kind in ("Min", "Max"):
        return f"{kind.lower()}({_text(expr.a)}, {_text(expr.b)})"
    if kind == "Cast":
        return _text(expr.value)
    raise DeviceBuildError(
        f"launch extent {expr}: expected ints, symbolic dims, + - * // % min max; got {kind}"
    )


#: TVM names the device kernels of a function ``<name>_kernel``, ``<name>_kernel_1``, ...
#: in the order of their launches.
_DEVICE_SYMBOL = re.compile(r"^(?P<host>.*)_kernel(?:_(?P<index>\d+))?$")


def _launch_of(func: Any, index: int) -> tuple[tuple[int | str, ...], tuple[int | str, ...], int]:
    """Grid, block and dynamic shared memory of launch ``index`` of ``func``."""
    from tl_ir.launch import kernel_launches

    attrs = func.attrs or {}
    per_kernel = attrs.get(KERNEL_SHARED_ATTR)
    shared = per_kernel[index] if per_kernel is not None else attrs.get(DYNAMIC_SHARED_ATTR)
    shared_bytes = int(shared) if shared is not None else 0
    found = kernel_launches(func)
    if not found:
        return (1,), (1,), shared_bytes
    if index >= len(found):
        raise DeviceBuildError(
            f"device kernel {index} of {len(found)} T.Kernel launches: TVM made more device "
            "kernels than the function has launches"
        )
    launch = found[index][1]
    grid = tuple(dim_expression(e) for e in launch.grid) or (1,)
    block = tuple(dim_expression(e) for e in launch.threads) or (1,)
    return grid, block, shared_bytes


def _workspaces(host_func: Any) -> dict[str, DeviceArgument]:
    """The global-scope buffers ``host_func`` allocates outside its kernels
    (``T.alloc_global``), keyed by the names a device parameter carries for them."""
    found: dict[str, DeviceArgument] = {}

    def visit(alloc: Any) -> None:
        buffer = alloc.buffer
        if str(buffer.ty.storage_scope) not in ("", scopes.GLOBAL):
            return
        dtype = str(buffer.ty.dtype)
        nbytes: Any = tirx.const(max(1, tvm.DataType(dtype).bits // 8), "int64")
        for extent in buffer.shape:
            nbytes = nbytes * extent
        argument = DeviceArgument(
            "workspace",
            str(buffer.name),
            dtype,
            dim_expression(tvm.sym.Analyzer().simplify(nbytes)),
        )
        found[str(buffer.name)] = argument
        found[f"{buffer.name}_ptr"] = argument

    tvm_ffi.structural_walk(host_func.body, (tirx.AllocBuffer, visit), order="pre")
    return found


def _arguments(device_func: Any, host_func: Any) -> tuple[DeviceArgument, ...]:
    buffers = {}
    scalars = {}
    dims: dict[str, str] = {}
    for param in host_func.params:
        ty = param.ty
        if isinstance(ty, tirx.BufferType):
            buffers[f"{param.name}_ptr"] = (str(param.name), str(ty.dtype))
            buffers[str(param.name)] = (str(param.name), str(ty.dtype))
            for extent in ty.shape:
                if isinstance(extent, tvm.ir.Var):
                    dims[str(extent.name)] = str(extent.ty.dtype)
        else:
            scalars[str(param.name)] = str(ty.dtype)
    workspaces = _workspaces(host_func)
    out = []
    for param in device_func.params:
        name = str(param.name)
        type_name = type(param.ty).__name__
        if type_name == "PointerType" and name not in buffers and name in workspaces:
            out.append(workspaces[name])
        elif type_name == "PointerType":
            if name not in buffers:
                raise DeviceBuildError(
                    f"device parameter {name}: expected a data pointer of a kernel buffer "
                    f"parameter ({sorted(set(b for b, _ in buffers.values()))})"
                )
            buffer_name, dtype = buffers[name]
            out.append(DeviceArgument("buffer", buffer_name, dtype))
        elif name in scalars:
            out.append(DeviceArgument("scalar", name, scalars[name]))
        elif name in dims:
            out.append(DeviceArgument("dim", name, str(param.ty.dtype)))
        else:
            raise DeviceBuildError(
                f"device parameter {name}: expected a kernel parameter or symbolic dim"
            )
    return tuple(out)


def _without_host_cse() -> Any:
    """`sound_lowering` with TVM's common-subexpression elimination off (unless the
    caller set it): CSE binds an expression two launches share (``n - 1`` of
    ``T.ceildiv(n, 64)`` and ``T.ceildiv(n, 128)``) to a host variable, which then
    reaches a device kernel as a parameter that is neither a kernel parameter nor a
    symbolic dim, and no launch could pass it. The device compiler eliminates common
    subexpressions itself."""
    return sound_lowering(defaults={_DISABLE_CSE: True})


_DISABLE_CSE = "tirx.disable_cse_tir"


def build_device_module(
    mod: tvm.IRModule,
    target: Any,
    *,
    host: Any | None = None,
    source_formats: tuple[str, ...] = ("",),
) -> DeviceModule:
    """Lower ``mod`` (after the ``gpu-*`` passes) with TVM and generate device code.

    Args:
        mod: the module with one GPU kernel PrimFunc (others are ignored).
        target: the GPU target.
        host: the host target (a TVM Target or its text) the backend's host code
            is built for; used when ``target`` has no host of its own.
        source_formats: the formats to read from TVM's device module
            (``""`` the default source; ``"asm"``/``"ll"`` on ROCm).

    Returns:
        The device sources and kernels.

    Raises:
        DeviceBuildError: TVM failed (its message), no device kernel came out, or
            neither ``target`` nor ``host`` names a host target.
    """
    from tvm.target import Target
    from tvm.tirx.build import split_host_device_mods

    if target.host is None:
        if host is None:
            raise DeviceBuildError(
                f"target {target.kind.name!r} has no host target and no host= was given "
                "(the backend's codegen passes the host it builds for)"
            )
        target = Target(target, host=host if isinstance(host, Target) else Target(host))
    kernels_before = {
        gv.name_hint: func for gv, func in mod.functions.items() if isinstance(func, tirx.PrimFunc)
    }
    try:
        # TVM's buffer compaction shrinks a per-thread tile indexed by memory reads to
        # one element.
        whole = keep_data_indexed_tiles_whole(mod, scopes=(scopes.LOCAL,))
        bound = tvm.tirx.transform.BindTarget(target)(whole)
        pipeline, _finalize_host, finalize_device = tvm.tirx.get_tir_pipeline("s_tir")
        with _without_host_cse():
            lowered = pipeline(bound)
        _host, device_mods = split_host_device_mods(lowered)
        if not device_mods:
            raise DeviceBuildError("no device kernel came out of lowering (is there a T.Kernel?)")
        sources: dict[str, str] = {}
        ordered: list[tuple[int, DeviceKernel]] = []
        for device_target, device_mod in device_mods.items():
            device_mod = finalize_device()(device_mod)
            build = tvm.get_global_func("target.build." + str(device_target.kind.name))
            runtime_module = build(device_mod, device_target)
            for fmt in source_formats:
                text = runtime_module.inspect_source(fmt)
                sources[fmt] = sources.get(fmt, "") + str(text)
            for gv, device_func in device_mod.functions.items():
                symbol = str(device_func.attrs.get("global_symbol", gv.name_hint))
                match = _DEVICE_SYMBOL.match(symbol)
                host_name = match["host"] if match else symbol
                index = int(match["index"]) if match and match["index"] else 0
                original = kernels_before.get(host_name) or next(iter(kernels_before.values()))
                grid, block, shared = _launch_of(original, index)
                ordered.append(
                    (
                        index,
                        DeviceKernel(
                            symbol=symbol,
                            grid=grid,
                            block=block,
                            dynamic_shared_memory=shared,
                            arguments=_arguments(device_func, original),
                        ),
                    )
                )
        kernels = [kernel for _, kernel in sorted(ordered, key=lambda pair: pair[0])]
    except DeviceBuildError:
        raise
    except Exception as exc:  # TVM reports codegen failures as its own error types
        raise DeviceBuildError(f"TVM device codegen for {target.kind.name} failed: {exc}") from exc
    return DeviceModule(sources=sources, kernels=tuple(kernels))
