"""Async ``T.copy`` (an `ASYNC_COPY_KEY` statement of a pipelined ring) on GPU targets.

A copy from a global tile into a shared tile of one dtype and shape becomes,
per thread, calls of the target's `AsyncCopy` functions: the widest copy size
(16 bytes on CUDA, then 8, then 4) whose vector of elements is proven aligned
(`copy.aligned_lanes`: innermost tile extent, both buffers' innermost dims and
both tiles' innermost starts multiples of the vector) moves each vector, the
threads of the block splitting the vectors. A vector of a partial edge tile
lies wholly inside or wholly outside the source: outside, the zero-filling
form writes zeros and reads nothing. A copy that allows none of the sizes (or
converts, or has no async form on the target) runs as a plain ``T.copy``:
synchronous, so the ring's barrier orders it like the async ones.
`gpu-finish-async-copies` (after ``simplify``) turns the zero-filling copies
whose source the simplifier proved inside (grid and loop bounds) into the
plain ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir import scopes
from tl_passes.gpu.copy import aligned_lanes, lower_copy
from tl_passes.gpu.operand import Operand
from tl_passes.gpu.tir_build import guard
from tl_passes.gpu.traits import PORTABLE_TRAITS, AsyncCopy, GpuTraits
from tl_passes.pass_base import PassContext, PrimFuncPass

if TYPE_CHECKING:
    from tl_passes.gpu.kernel import KernelLowering


def lower_async_copy(kernel: KernelLowering, op: Any) -> Any:
    """The per-thread async copies of the ``T.copy`` ``op`` (module docstring)."""
    copy = kernel.traits.async_copy_for(kernel.target)
    src, dst = Operand(op.src, kernel), Operand(op.dst, kernel)
    if (
        copy is None
        or src.scope != scopes.GLOBAL
        or dst.scope not in scopes.SHARED_SCOPES
        or src.dtype != dst.dtype
        or src.squeezed != dst.squeezed
        or not src.squeezed
    ):
        return lower_copy(kernel, op)
    bits = int(tvm.DataType(src.dtype).bits)
    chosen: tuple[int, int] | None = None
    for size in copy.sizes():
        if bits == 0 or (size * 8) % bits:
            continue
        lanes = size * 8 // bits
        if aligned_lanes(src, dst, lanes):
            chosen = (size, lanes)
            break
    if chosen is None:
        return lower_copy(kernel, op)
    size, lanes = chosen
    name = copy.copies[size]
    squeezed = src.squeezed
    extents = [*squeezed[:-1], squeezed[-1] // lanes]

    def body(index: list[Any]) -> Any:
        element = [*index[:-1], index[-1] * lanes]
        s_element, d_element = src.expand(element), dst.expand(element)
        target = tirx.address_of(tirx.BufferLoad(dst.buffer, dst.full_index(d_element)))
        source = tirx.address_of(tirx.BufferLoad(src.buffer, src.full_index(s_element)))
        inside = src.inside(s_element)
        if inside is None:
            call = tirx.call_extern("void", name, target, source)
        else:
            valid = tirx.Cast("int32", inside)
            call = tirx.call_extern("void", name + copy.zero_fill_suffix, target, source, valid)
        return guard(tirx.Evaluate(call), dst.inside(d_element))

    return kernel.cooperative(extents, body)


def drop_proven_zero_fills(body: Any, copy: AsyncCopy) -> Any:
    """``body`` with every zero-filling copy whose ``valid`` operand simplified to a
    constant made the plain copy (valid 1) or a zero store it is (valid 0 stays)."""
    plain = {name + copy.zero_fill_suffix: name for name in copy.copies.values()}

    def rewrite(call: Any) -> Any:
        if str(getattr(call.op, "name", "")) != "tirx.call_extern":
            return call
        name = str(call.args[0].value)
        if name not in plain or len(call.args) != 4:
            return call
        valid = call.args[3]
        if isinstance(valid, tirx.IntImm) and int(valid.value) == 1:
            return tirx.call_extern("void", plain[name], call.args[1], call.args[2])
        return call

    return tvm_ffi.structural_map(body, (tvm.ir.Call, rewrite), order="post")


@dataclass(frozen=True)
class GpuFinishAsyncCopiesPass(PrimFuncPass):
    """After ``simplify``: zero-filling async copies whose source is proven inside its
    buffer (``valid`` folded to 1) become the plain copies.

    Args:
        traits: the backend's traits (``async_copy`` names the functions).
    """

    name: ClassVar[str] = "gpu-finish-async-copies"
    traits: GpuTraits = field(default=PORTABLE_TRAITS)

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """``body`` with the proven zero-fills dropped."""
        copy = self.traits.async_copy
        return body if copy is None else drop_proven_zero_fills(body, copy)
