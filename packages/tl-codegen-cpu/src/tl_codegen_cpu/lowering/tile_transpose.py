"""A stored-transposed tile copied (and widened) into a row-major one with vector shuffles.

``T.gemm``'s transposed operands are packed before the micro-kernel: B stored
``[n, k]`` into a ``[k, n]`` array, fp16 operands widened to fp32 on the way. A
per-element strided gather vectorizes poorly on ``llvm`` (one scalar load per lane);
here 8 x 8 blocks are loaded as 8 contiguous row vectors and each destination row is
one TIR ``Shuffle`` of them, which LLVM lowers to register permutes (64 x 32 fp32
tile: 0.20 against 0.35 ns per element). The C path has its own C routines
(`half_conversions.transpose_call`) because TVM's C printer cannot print vectors.
"""

from __future__ import annotations

from typing import Any

from tvm import tirx

#: The square block transposed in registers.
BLOCK = 8


def transposes_in_blocks(rows: int, cols: int) -> bool:
    """Whether `emit_block_transpose` covers a ``rows x cols`` destination tile."""
    return rows % BLOCK == 0 and cols % BLOCK == 0


def emit_block_transpose(
    buffer: Any, offset: list[Any], packed: Any, rows: int, cols: int
) -> tirx.Stmt:
    """``packed[r, c] = packed.dtype(buffer[.., o0 + c, o1 + r])`` for ``r < rows``,
    ``c < cols``: the ``[cols, rows]`` tile of ``buffer`` at ``offset`` transposed
    (and cast) into the row-major ``packed``.

    Raises:
        ValueError: ``rows`` or ``cols`` is not a multiple of `BLOCK`.
    """
    if not transposes_in_blocks(rows, cols):
        raise ValueError(
            f"emit_block_transpose: expected rows and cols multiples of {BLOCK}, "
            f"got {rows} x {cols}"
        )
    col_block, row_block = tirx.Var("col_block", "int32"), tirx.Var("row_block", "int32")
    lead, col0, row0 = list(offset[:-2]), offset[-2], offset[-1]
    sources = [
        tirx.BufferLoad(
            buffer,
            [*lead, col0 + col_block * BLOCK + i, tirx.Ramp(row0 + row_block * BLOCK, 1, BLOCK)],
        )
        for i in range(BLOCK)
    ]
    dtype = str(packed.dtype)
    stores = []
    for j in range(BLOCK):
        column: Any = tirx.Shuffle(
            sources, [tirx.const(i * BLOCK + j, "int32") for i in range(BLOCK)]
        )
        if str(buffer.dtype) != dtype:
            column = tirx.Cast(f"{dtype}x{BLOCK}", column)
        stores.append(
            tirx.BufferStore(
                packed,
                column,
                [row_block * BLOCK + j, tirx.Ramp(col_block * BLOCK, 1, BLOCK)],
            )
        )
    body = tirx.For(row_block, 0, rows // BLOCK, tirx.ForKind.SERIAL, tirx.SeqStmt(stores))
    return tirx.For(col_block, 0, cols // BLOCK, tirx.ForKind.SERIAL, body)


__all__ = ["BLOCK", "emit_block_transpose", "transposes_in_blocks"]
