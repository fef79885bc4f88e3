"""``T.gemm`` on GPU targets: on the target's matrix instruction where `gemm_mma`
takes it, else a per-thread FMA loop over K.

Each thread updates the C elements its driver gives it (C's layout, or a
cooperative split), accumulating in C's dtype; A and B are shared, global or
replicated (a partitioned A or B is refused) and transposes are by index. A and B
are the last two dims of their tiles: leading dims of extent 1 (a batch slice
``A_shared[b, :, :]``) index at the region's start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tvm import tirx

from tl_passes.gpu.errors import GpuLoweringError
from tl_passes.gpu.gemm_mma import mma_gemm
from tl_passes.gpu.operand import Operand
from tl_passes.gpu.tir_build import cast, const_int, for_loop, int_imm, seq

if TYPE_CHECKING:
    from tl_passes.gpu.kernel import KernelLowering


def _matrix_index(operand: Operand, row: Any, col: Any) -> list[Any]:
    """The tile index of element ``(row, col)`` of a matrix tile whose leading dims (a batch
    slice such as ``A_shared[b, :, :]``) have extent 1."""
    return [int_imm(0)] * (len(operand.extents) - 2) + [row, col]


def lower_gemm(kernel: KernelLowering, op: Any) -> Any:
    """The per-thread code of the ``T.gemm`` ``op`` (module docstring)."""
    on_tensor_cores = mma_gemm(kernel, op)
    if on_tensor_cores is not None:
        return on_tensor_cores
    a, b, c = Operand(op.a, kernel), Operand(op.b, kernel), Operand(op.c, kernel)
    m, n, k = (const_int(op.M), const_int(op.N), const_int(op.K))
    if m is None or n is None or k is None:
        raise GpuLoweringError("T.gemm: expected static M, N, K on GPU targets")
    for operand in (a, b):
        if operand.partitioned:
            raise GpuLoweringError(f"T.gemm: operand {operand.name} must not be partitioned")
        if len(operand.extents) < 2 or any(e != 1 for e in operand.extents[:-2]):
            raise GpuLoweringError(
                f"T.gemm: operand {operand.name}: expected a matrix tile (leading dims of "
                f"extent 1, as in A_shared[b, :, :]), got extents {operand.extents}"
            )
    acc = c.dtype
    kv = kernel.fresh("k")

    def a_at(i: Any) -> Any:
        return a.load(_matrix_index(a, *((kv, i) if op.transpose_a else (i, kv))))

    def b_at(j: Any) -> Any:
        return b.load(_matrix_index(b, *((j, kv) if op.transpose_b else (kv, j))))

    def c_index(index: list[Any]) -> list[Any]:
        return c.expand(index) if c.squeezed == [m, n] else index

    def clear(index: list[Any], local: Any) -> Any:
        return c.store(c_index(index), tirx.const(0, acc), local)

    def update(index: list[Any], local: Any) -> Any:
        i, j = index if len(index) == 2 else (index[0], int_imm(0))
        full = c_index(index)
        product = cast(a_at(i), acc) * cast(b_at(j), acc)
        return c.store(full, c.load(full, local) + product, local)

    if c.squeezed != [m, n] and not (m == 1 or n == 1):
        raise GpuLoweringError(f"T.gemm: C tile {c.extents} does not match M x N = {m}x{n}")
    extents = [m, n]
    parts = []
    if op.clear_accum:
        parts.append(kernel.drive([c], extents, clear, c))
    parts.append(for_loop(kv, k, kernel.drive([c], extents, update, c)))
    return seq(parts)
