"""``T.atomic_add``/``max``/``min``/``or`` and ``T.atomic_load``/``store`` on GPU
targets, spelled as the backend's `GpuTraits.atomics` says (an external helper or a
TIR intrinsic per kind, with the dtypes it takes).

A kind the traits lack, or a dtype its `AtomicCall` does not take, raises
`GpuLoweringError` naming the target.

Who runs what, as in TileLang: a scalar atomic (``T.atomic_add(C[i], v)``,
one element and a scalar value) is TileLang's per-thread element atomic, a
statement of the thread's code: every thread that reaches it runs it, inside
a ``T.Parallel`` nest (once per element) or outside one (once per thread,
whether or not its operands differ between the threads: a kernel of 128
threads running ``T.atomic_add(C[0], 1)`` adds 128). A tile atomic (a tile
value) updates each element of the tile once, its elements dealt to the
block's threads as ``T.copy`` deals them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tvm import tirx

from tl_ir import scopes
from tl_passes.gpu.errors import GpuLoweringError
from tl_passes.gpu.operand import Operand
from tl_passes.gpu.tir_build import both, cast, guard, int_imm

if TYPE_CHECKING:
    from tl_passes.gpu.kernel import KernelLowering


def atomic(
    kernel: KernelLowering,
    kind: str,
    buffer: Any,
    index: list[Any],
    value: Any,
    prev: Any = None,
) -> Any:
    """``buffer[index] <kind>= value`` atomically, as the target's traits spell it.
    With ``prev`` (a `Region` of one thread-private element) the call's result, the
    element's value before the update (what ``atomicAdd`` and the traits' helpers
    return), is stored there: ``T.atomic_<kind>(..., return_prev=True)``; for a
    ``load`` (called with the address only, ``value`` unused) the loaded value.

    Raises:
        GpuLoweringError: the target's `GpuTraits.atomics` has no ``kind``, or its
            spelling does not take ``buffer``'s dtype.
    """
    dtype = str(buffer.ty.dtype)
    address = tirx.address_of(tirx.BufferLoad(buffer, index))
    spelling = kernel.traits.atomics.get(kind)
    if spelling is None:
        offered = ", ".join(sorted(kernel.traits.atomics)) or "none"
        raise GpuLoweringError(
            f"T.atomic_{kind} is not implemented on target {kernel.traits.name!r} "
            f"(its atomics: {offered})"
        )
    if spelling.dtypes is not None and dtype not in spelling.dtypes:
        raise GpuLoweringError(
            f"T.atomic_{kind} on {buffer.name}: dtype {dtype} is not supported on target "
            f"{kernel.traits.name!r}; expected one of {sorted(spelling.dtypes)}"
        )
    operands = [address] if kind == "load" else [address, cast(value, dtype)]
    if spelling.intrinsic:
        call = tirx.call_intrin(dtype, spelling.name, *operands)
    else:
        call = tirx.call_extern(dtype, spelling.name, *operands)
    if prev is None:
        return tirx.Evaluate(call)
    return tirx.BufferStore(prev.buffer, call, list(prev.mins))


def lower_atomic(kernel: KernelLowering, op: Any, per_element: bool) -> Any:
    """The per-thread code of the tile atomic ``op`` (module docstring: a scalar
    atomic runs on every thread that reaches it, a tile atomic once per element).
    ``per_element`` (inside a ``T.Parallel`` nest) does not change a scalar
    atomic: each thread runs its own update either way. A tile atomic there
    (``T.atomic_addx2`` in a nest dealt to the threads) belongs to the thread's own
    iteration: that thread updates the whole tile."""
    from tl_ir import ops as tile

    dst = Operand(op.dst, kernel)
    if dst.scope != scopes.GLOBAL and dst.scope not in scopes.SHARED_SCOPES:
        raise GpuLoweringError(
            f"T.atomic_{op.kind}: destination {dst.name} must be in global or shared memory"
        )
    if not isinstance(op.value, tile.Region):
        if dst.squeezed:
            # The front end writes a scalar onto a tile as a loop of element atomics.
            raise GpuLoweringError(
                f"T.atomic_{op.kind}: a scalar value onto the tile {dst.name} reached the "
                "GPU lowering; expected one element (tl_ir.run_time_tiles expands the tile)"
            )
        origin = [int_imm(0)] * len(dst.extents)
        update = atomic(kernel, op.kind, dst.buffer, dst.full_index(origin), op.value, op.prev)
        return guard(update, dst.inside(origin))
    src = Operand(op.value, kernel)
    extents = dst.squeezed

    def body(index: list[Any], local: Any) -> Any:
        s_index, d_index = src.expand(index), dst.expand(index)
        update = atomic(
            kernel, op.kind, dst.buffer, dst.full_index(d_index), src.load(s_index, local)
        )
        return guard(update, both(dst.inside(d_index), src.inside(s_index)))

    if per_element and not src.partitioned:
        return kernel.every(extents, lambda index: body(index, None))
    return kernel.drive([src], extents, body, None)
