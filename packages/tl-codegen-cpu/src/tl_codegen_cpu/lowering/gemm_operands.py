"""Half-precision ``T.gemm`` operands widened once per call, then the fp32 micro-kernel.

A ``T.gemm`` of fp16/bf16 tiles into an fp32 accumulator would otherwise convert
inside the micro-kernel's k loop: every broadcast element of A and every vector of
B once per register tile that reads it (B's tile 16 times for a 128-row C tile on
AVX-512), which halves the FMA rate on ``llvm`` and leaves ``c`` without a vector
kernel. Here each half operand is first converted into a block-local fp32 tile in
the micro-kernel's preferred layout (A as ``[m, k]``, B as ``[k, n]``, so transposed
operands come out contiguous too): ``k * (m + n)`` conversions per call, in
vectorized loops, against ``m * n * k`` multiply-adds. The products are the same
(fp16 and bf16 convert to fp32 exactly; the micro-kernel multiplies in fp32 either
way).

Accumulator and operand dtypes the micro-kernel has no code for (an fp16 or bf16
accumulator, as TileLang's fp16-accumulating GEMMs use; narrow unsigned integers)
get the plain loop nest ``C[i, j] = C[i, j] + A[i, k] * B[k, j]`` in C's dtype
(`scalar_tile_gemm`), which the later passes legalize and vectorize like any loop.
"""

from __future__ import annotations

from typing import Any

from tvm import tirx

from tl_codegen_cpu.lowering.gemm_microkernel import (
    SUPPORTED_OPERAND_DTYPES,
    GemmOperand,
    emit_gemm_microkernel,
)
from tl_codegen_cpu.lowering.half_conversions import transpose_call
from tl_codegen_cpu.lowering.tile_transpose import emit_block_transpose, transposes_in_blocks
from tl_codegen_cpu.lowering.vector_isa import VectorISA
from tl_passes.buffer_rewrite import substitute_vars

#: Operand dtypes widened to fp32 before an fp32-accumulating micro-kernel.
WIDENED_DTYPES: tuple[str, ...] = ("float16", "bfloat16")


def _substitute(index: list[Any], var: tirx.Var, value: Any) -> list[Any]:
    return [substitute_vars(tirx.Evaluate(e), {var: value}).value for e in index]


def _widen(
    operand: GemmOperand,
    rows: int,
    cols: int,
    transposed: bool,
    lanes: int,
    name: str,
    style: str = "tir",
) -> tuple[tirx.Stmt, tirx.Stmt, GemmOperand]:
    """``(allocation, conversion, fp32 operand)``: the ``rows x cols`` logical tile of
    ``operand`` (stored ``[cols, rows]`` when ``transposed``) as a contiguous fp32 array.
    On the C path a transposed fp16 tile calls ``tl_cvt_f16_to_f32_t``."""
    buffer = operand.buffer
    offset = list(operand.offset)
    packed = tirx.decl_buffer((rows, cols), "float32", name=name)
    if (
        transposed
        and style == "c-vector-extension"
        and str(buffer.dtype) == "float16"
        and not buffer.strides
    ):
        convert = transpose_call(buffer, offset, packed, rows, cols)
        return tirx.AllocBuffer(packed), convert, GemmOperand(packed, (0, 0))
    if transposed and style == "tir" and transposes_in_blocks(rows, cols):
        convert = emit_block_transpose(buffer, offset, packed, rows, cols)
        return tirx.AllocBuffer(packed), convert, GemmOperand(packed, (0, 0))
    row, col = tirx.Var("row", "int32"), tirx.Var("col", "int32")
    where = (
        [*offset[:-2], offset[-2] + col, offset[-1] + row]
        if transposed
        else [*offset[:-2], offset[-2] + row, offset[-1] + col]
    )
    store = tirx.BufferStore(
        packed, tirx.Cast("float32", tirx.BufferLoad(buffer, where)), [row, col]
    )
    if cols % lanes == 0 and cols > lanes:
        # Register-wide vector chunks (one conversion instruction each).
        chunk, lane = tirx.Var("chunk", "int32"), tirx.Var("lane", "int32")
        store = tirx.BufferStore(
            packed,
            tirx.Cast(
                "float32",
                tirx.BufferLoad(buffer, _substitute(where, col, chunk * lanes + lane)),
            ),
            [row, chunk * lanes + lane],
        )
        loop = tirx.For(lane, 0, lanes, tirx.ForKind.VECTORIZED, store)
        loop = tirx.For(chunk, 0, cols // lanes, tirx.ForKind.SERIAL, loop)
    else:
        kind = tirx.ForKind.VECTORIZED if cols <= lanes else tirx.ForKind.SERIAL
        loop = tirx.For(col, 0, cols, kind, store)
    loop = tirx.For(row, 0, rows, tirx.ForKind.SERIAL, loop)
    return tirx.AllocBuffer(packed), loop, GemmOperand(packed, (0, 0))


def emit_tile_gemm(
    a: GemmOperand,
    b: GemmOperand,
    c: GemmOperand,
    m: int,
    n: int,
    k: int,
    *,
    transpose_a: bool,
    transpose_b: bool,
    isa: VectorISA,
    style: str,
    product_dtype: str | None = None,
) -> tirx.Stmt:
    """``C[m x n] += op(A) @ op(B)`` for ``T.gemm``: `emit_gemm_microkernel`, with
    fp16/bf16 operands of an fp32 accumulator widened to fp32 tiles first (module doc).

    ``product_dtype`` (as `emit_gemm_microkernel`'s): products rounded to the operands'
    half type before the fp32 add; such operands stay half precision (no widening).

    Raises:
        TypeError, ValueError: as `emit_gemm_microkernel` (bad operands, extents,
            dtype mixes).
    """
    c_dtype = str(c.buffer.dtype)
    allowed = SUPPORTED_OPERAND_DTYPES.get(c_dtype, ())
    if product_dtype is None and not all(str(o.buffer.dtype) in allowed for o in (a, b)):
        return scalar_tile_gemm(a, b, c, m, n, k, transpose_a=transpose_a, transpose_b=transpose_b)
    rounded = product_dtype is not None and product_dtype != c_dtype
    widen = [
        c_dtype == "float32" and not rounded and str(operand.buffer.dtype) in WIDENED_DTYPES
        for operand in (a, b)
    ]
    if not any(widen):
        return emit_gemm_microkernel(
            a,
            b,
            c,
            m,
            n,
            k,
            transpose_a=transpose_a,
            transpose_b=transpose_b,
            isa=isa,
            style=style,
            product_dtype=product_dtype,
        )
    lanes = isa.lanes("float32")
    prologue: list[Any] = []
    allocations: list[Any] = []
    if widen[0]:
        alloc, convert, a = _widen(a, m, k, transpose_a, lanes, "gemm_a_fp32", style)
        allocations.append(alloc)
        prologue.append(convert)
        transpose_a = False
    if widen[1]:
        alloc, convert, b = _widen(b, k, n, transpose_b, lanes, "gemm_b_fp32", style)
        allocations.append(alloc)
        prologue.append(convert)
        transpose_b = False
    kernel = emit_gemm_microkernel(
        a, b, c, m, n, k, transpose_a=transpose_a, transpose_b=transpose_b, isa=isa, style=style
    )
    return tirx.SeqStmt([*allocations, *prologue, kernel])


def scalar_tile_gemm(
    a: GemmOperand,
    b: GemmOperand,
    c: GemmOperand,
    m: int,
    n: int,
    k: int,
    *,
    transpose_a: bool,
    transpose_b: bool,
) -> tirx.Stmt:
    """``C[m x n] += op(A) @ op(B)`` as three loops, each product and sum in C's dtype
    (operands converted to it), ``k`` ascending for every element of C."""
    acc = str(c.buffer.dtype)
    i, j, kk = (tirx.Var(name, "int32") for name in ("gemm_i", "gemm_j", "gemm_k"))

    def element(operand: GemmOperand, row: Any, col: Any) -> list[Any]:
        index = list(operand.offset)
        index[-2] = index[-2] + row
        index[-1] = index[-1] + col
        return index

    def value(operand: GemmOperand, row: Any, col: Any) -> Any:
        load = tirx.BufferLoad(operand.buffer, element(operand, row, col))
        return load if str(operand.buffer.dtype) == acc else tirx.Cast(acc, load)

    product = value(a, kk, i) if transpose_a else value(a, i, kk)
    product = product * (value(b, j, kk) if transpose_b else value(b, kk, j))
    at = element(c, i, j)
    body: tirx.Stmt = tirx.BufferStore(c.buffer, tirx.BufferLoad(c.buffer, at) + product, at)
    for var, extent in ((kk, k), (j, n), (i, m)):
        body = tirx.For(var, 0, extent, tirx.ForKind.SERIAL, body)
    return body


__all__ = ["WIDENED_DTYPES", "emit_tile_gemm", "scalar_tile_gemm"]
