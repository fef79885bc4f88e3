"""``T.fill`` on GPU targets: each thread stores the value into the elements its
driver assigns (a partitioned fragment's own elements, or a cooperative split)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tl_passes.gpu.operand import Operand
from tl_passes.gpu.tir_build import guard

if TYPE_CHECKING:
    from tl_passes.gpu.kernel import KernelLowering


def lower_fill(kernel: KernelLowering, op: Any) -> Any:
    """The per-thread code of the ``T.fill`` ``op``: each element its driver assigns."""
    dst = Operand(op.dst, kernel)

    def body(index: list[Any], local: Any) -> Any:
        d_index = dst.expand(index)
        return guard(dst.store(d_index, op.value, local), dst.inside(d_index))

    return kernel.drive([dst], dst.squeezed, body, dst)
