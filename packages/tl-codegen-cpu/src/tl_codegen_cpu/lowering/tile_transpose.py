"""A stored-transposed tile copied (and widened) into a row-major one with vector shuffles.

``T.gemm``'s transposed operands are packed before the micro-kernel: B stored
``[n, k]`` into a ``[k, n]`` array, fp16 operands widened to fp32 on the way. A
per-element strided gather vectorizes poorly on ``llvm`` (one scalar load per lane);
here 8 x 8 blocks are loaded as 8 contiguous row vectors (widened there), transposed by
three stages of two-input TIR ``Shuffle`` s (unpack, pair, 128-bit halves: 24 register
permutes) and stored as 8 rows (64 x 32 fp32 tile: 0.20 against 0.35 ns per element
for the gather; one 8-input shuffle per row of fp16 lanes, the earlier form, LLVM
compiled into a lane-by-lane gather). The C path has its own C routines
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
    dtype = str(packed.dtype)
    vector = f"{dtype}x{BLOCK}"
    # Each source row widened first (one vcvtph2ps for fp16), then the 8 x 8 block
    # transposed by three stages of two-input shuffles, which LLVM matches to
    # vunpcklps/vshufps/vperm2f128 (24 in all); one 8-input shuffle per destination row
    # of fp16 lanes became an element-by-element gather (vpinsrw/vinsertps).
    rows_in: list[Any] = []
    for i in range(BLOCK):
        load: Any = tirx.BufferLoad(
            buffer,
            [*lead, col0 + col_block * BLOCK + i, tirx.Ramp(row0 + row_block * BLOCK, 1, BLOCK)],
        )
        rows_in.append(load if str(buffer.dtype) == dtype else tirx.Cast(vector, load))
    names: list[tuple[tirx.Var, Any]] = []

    # A bfloat16 block stays one expression per store: TVM's BF16ComputeLegalize retypes
    # bfloat16 buffers but leaves loads inside a bound value on the old buffer, which
    # StorageRewrite then refuses ("occurred before its declaration"); LLVM merges the
    # repeated loads and shuffles.
    inline = str(buffer.dtype) == "bfloat16"

    def bind(name: str, value: Any) -> Any:
        if inline:
            return value
        var = tirx.Var(name, vector)
        names.append((var, value))
        return var

    def pair(a: Any, b: Any, lanes: list[int]) -> tirx.Shuffle:
        return tirx.Shuffle([a, b], [tirx.const(x, "int32") for x in lanes])

    v = [bind(f"row{i}", rows_in[i]) for i in range(BLOCK)]
    t: list[Any] = [None] * BLOCK
    for i in range(0, BLOCK, 2):  # interleave within 128-bit halves (unpacklo / unpackhi)
        t[i] = bind(f"lo{i}", pair(v[i], v[i + 1], [0, 8, 1, 9, 4, 12, 5, 13]))
        t[i + 1] = bind(f"hi{i}", pair(v[i], v[i + 1], [2, 10, 3, 11, 6, 14, 7, 15]))
    u: list[Any] = [None] * BLOCK
    for i in (0, 4):  # pairs of pairs (shufps)
        for k, (a, b) in enumerate(((t[i], t[i + 2]), (t[i + 1], t[i + 3]))):
            u[i + 2 * k] = bind(f"q{i + 2 * k}", pair(a, b, [0, 1, 8, 9, 4, 5, 12, 13]))
            u[i + 2 * k + 1] = bind(f"q{i + 2 * k + 1}", pair(a, b, [2, 3, 10, 11, 6, 7, 14, 15]))
    stores = []
    for i in range(BLOCK // 2):  # 128-bit halves (vperm2f128): rows i and i + 4
        for j, lanes in ((i, [0, 1, 2, 3, 8, 9, 10, 11]), (i + 4, [4, 5, 6, 7, 12, 13, 14, 15])):
            stores.append(
                tirx.BufferStore(
                    packed,
                    pair(u[i], u[i + 4], lanes),
                    [row_block * BLOCK + j, tirx.Ramp(col_block * BLOCK, 1, BLOCK)],
                )
            )
    # TVM 0.27's `Bind` names a value for the statements after it in its sequence.
    body: tirx.Stmt = tirx.SeqStmt([*(tirx.Bind(var, value) for var, value in names), *stores])
    body = tirx.For(row_block, 0, rows // BLOCK, tirx.ForKind.SERIAL, body)
    return tirx.For(col_block, 0, cols // BLOCK, tirx.ForKind.SERIAL, body)


__all__ = ["BLOCK", "emit_block_transpose", "transposes_in_blocks"]
