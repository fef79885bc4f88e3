"""`cpu-lower-scalar-gemms`: a GEMM written as scalar loops runs on the GEMM micro-kernel.

TileLang programs written for CPUs spell a tile GEMM as a loop nest::

    for i, j, k in T.grid(bm, bn, bk):
        C_local[i, j] += A_local[i, k] * B_local[k, j]

Reordered (`cpu-interchange-reductions`) it vectorizes, but every step of ``k``
still loads and stores a row of C, and on ``c`` a product rounded to half
precision (fp16 operands multiply in fp16, as the program says) is converted one
element at a time: gcc 12 vectorizes no conversion between ``_Float16`` and
``float``. This pass recognizes the nest and emits the register-tiled micro-kernel
instead (`gemm_operands.emit_tile_gemm`, the code ``T.gemm`` gets), with the
products formed as the program forms them: in C's dtype, or in the operands' half
type, rounded there, then added (``product_dtype``; on ``c`` fp16 products call
``tl_gemm_f16r_f32x<lanes>``, AVX-512-FP16's ``vmulph`` where the CPU has it).

The result is bit-identical to the loops: each element of C receives the same
products in the same order of ``k``. What qualifies: a perfect nest of exactly three
serial (or ``T.Parallel``) loops from 0 over constant extents, in any order, whose
body is one store ``C[..., p + i, q + j] = C[..., p + i, q + j] + product`` (or
``product + C[...]``), with ``product`` ``A * B`` or ``Cast(C's dtype, A * B)``,
where each of A and B is a load (cast or not) of a buffer other than C (nor sharing
C's memory: a view of C, the buffer C views, another view of it) indexed
``[..., r + i, s + k]`` / ``[..., r + k, s + i]`` (A, transposed or not) and
``[..., r + k, s + j]`` / ``[..., r + j, s + k]`` (B), the offsets and leading
indices free of the loop variables. Any other nest is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.buffer_views import memory_aliases, view_pairs
from tl_codegen_cpu.lowering.gemm_microkernel import (
    ROUNDED_PRODUCT_DTYPES,
    SUPPORTED_OPERAND_DTYPES,
    GemmOperand,
)
from tl_codegen_cpu.lowering.gemm_operands import emit_tile_gemm
from tl_codegen_cpu.lowering.half_conversions import uses_var
from tl_codegen_cpu.lowering.vector_isa import VectorISA, vector_isa_for_target
from tl_ir.launch import LOOP_KIND_KEY
from tl_ir.ops import const_int
from tl_passes.pass_base import PassContext, PrimFuncPass


@dataclass(frozen=True)
class ScalarGemm:
    """A recognized nest: ``C[m x n] += op(A) @ op(B)`` with products in ``product_dtype``."""

    a: GemmOperand
    b: GemmOperand
    c: GemmOperand
    m: int
    n: int
    k: int
    transpose_a: bool
    transpose_b: bool
    product_dtype: str


def _nest_loop(loop: tirx.For) -> int | None:
    """The constant extent of a plain serial (or ``T.Parallel``) loop from 0, else None."""
    annotations = dict(loop.annotations.items()) if loop.annotations else {}
    kind = str(annotations.pop(LOOP_KIND_KEY, "parallel"))
    if loop.kind != tirx.ForKind.SERIAL or annotations or kind != "parallel":
        return None
    if const_int(loop.min) != 0:
        return None
    extent = const_int(loop.extent)
    return int(extent) if extent is not None and int(extent) > 0 else None


def _offset(index: Any, var: tirx.Var, loop_vars: list[tirx.Var]) -> Any | None:
    """``p`` when ``index`` is ``var``, ``p + var`` or ``var + p`` with ``p`` free of the
    nest's loop variables, else None."""
    if isinstance(index, tvm.ir.Var) and index.same_as(var):
        return tirx.const(0, str(index.dtype))
    if isinstance(index, tirx.Add):
        for this, other in ((index.a, index.b), (index.b, index.a)):
            moves = isinstance(this, tvm.ir.Var) and this.same_as(var)
            if moves and not any(uses_var(other, v) for v in loop_vars):
                return other
    return None


def _tile_offset(
    indices: list[Any], rows: tirx.Var, cols: tirx.Var, loop_vars: list[tirx.Var]
) -> tuple[Any, ...] | None:
    """The tile's first element when ``indices`` end in ``(p + rows, q + cols)`` and the
    leading ones are free of the loop variables, else None."""
    if len(indices) < 2:
        return None
    *lead, row, col = indices
    if any(uses_var(i, v) for i in lead for v in loop_vars):
        return None
    row0, col0 = _offset(row, rows, loop_vars), _offset(col, cols, loop_vars)
    if row0 is None or col0 is None:
        return None
    return (*lead, row0, col0)


def _operand_load(expr: Any, dtype: str) -> Any | None:
    """The load inside ``expr`` when it is a load of ``dtype`` or a cast of a load to it."""
    if isinstance(expr, tirx.Cast) and str(expr.dtype) == dtype:
        expr = expr.value
    if isinstance(expr, tvm.ir.TensorLoad) and tirx.is_buffer_var(expr.source):
        return expr
    return None


def match_scalar_gemm(
    top: tirx.For, views: list[tuple[Any, Any]] | None = None
) -> ScalarGemm | None:
    """The GEMM the nest under ``top`` computes, or None (module doc). ``views`` are the
    function's ``(view, viewed buffer)`` pairs (`buffer_views.view_pairs`), so that an
    operand sharing C's memory is refused."""
    loops: list[tirx.For] = []
    node: Any = top
    while isinstance(node, tirx.For) and len(loops) < 4:
        if _nest_loop(node) is None:
            return None
        loops.append(node)
        node = node.body
    store = node
    if len(loops) != 3 or not isinstance(store, tirx.BufferStore):
        return None
    c_buffer = store.buffer
    acc_dtype = str(c_buffer.dtype)
    if acc_dtype not in SUPPORTED_OPERAND_DTYPES or c_buffer.strides:
        return None
    value = store.value
    if not isinstance(value, tirx.Add):
        return None
    loop_vars = [lp.loop_var for lp in loops]
    indices = list(store.indices)

    def is_c(expr: Any) -> bool:
        return (
            isinstance(expr, tvm.ir.TensorLoad)
            and expr.source.same_as(c_buffer)
            and len(expr.indices) == len(indices)
            and all(
                tvm_ffi.structural_equal(x, y) for x, y in zip(expr.indices, indices, strict=True)
            )
        )

    if is_c(value.a):
        term = value.b
    elif is_c(value.b):
        term = value.a
    else:
        return None
    product = term
    if isinstance(term, tirx.Cast) and str(term.dtype) == acc_dtype:
        product = term.value
    if not isinstance(product, tirx.Mul):
        return None
    product_dtype = str(product.dtype)
    if product_dtype != acc_dtype and not (
        product_dtype in ROUNDED_PRODUCT_DTYPES and acc_dtype == "float32"
    ):
        return None
    factors = [_operand_load(product.a, product_dtype), _operand_load(product.b, product_dtype)]
    if any(f is None for f in factors):
        return None
    # C's last two indices name the row loop (i) and the column loop (j); the third is k.
    if len(indices) < 2:
        return None
    row_var = next((v for v in loop_vars if _offset(indices[-2], v, loop_vars) is not None), None)
    col_var = next((v for v in loop_vars if _offset(indices[-1], v, loop_vars) is not None), None)
    if row_var is None or col_var is None or row_var.same_as(col_var):
        return None
    k_var = next(v for v in loop_vars if not v.same_as(row_var) and not v.same_as(col_var))
    c_offset = _tile_offset(indices, row_var, col_var, loop_vars)
    if c_offset is None:
        return None

    def extent(var: tirx.Var) -> int:
        return next(int(_nest_loop(lp) or 0) for lp in loops if lp.loop_var.same_as(var))

    m, n, k = extent(row_var), extent(col_var), extent(k_var)
    a_match = b_match = None
    for first, second in ((factors[0], factors[1]), (factors[1], factors[0])):
        a_match = _operand(first, row_var, k_var, loop_vars)
        b_match = _operand(second, k_var, col_var, loop_vars)
        if a_match is not None and b_match is not None:
            break
    if a_match is None or b_match is None:
        return None
    (a_load, a_offset, transpose_a), (b_load, b_offset, transpose_b) = a_match, b_match
    c_memory = memory_aliases(c_buffer, views or [])
    for load in (a_load, b_load):
        if any(load.source.same_as(b) for b in c_memory) or load.source.strides:
            return None
        operand_dtype = str(load.source.dtype)
        if product_dtype != acc_dtype and operand_dtype != product_dtype:
            return None
        if operand_dtype not in SUPPORTED_OPERAND_DTYPES[acc_dtype]:
            return None
    return ScalarGemm(
        a=GemmOperand(a_load.source, a_offset),
        b=GemmOperand(b_load.source, b_offset),
        c=GemmOperand(c_buffer, c_offset),
        m=m,
        n=n,
        k=k,
        transpose_a=transpose_a,
        transpose_b=transpose_b,
        product_dtype=product_dtype,
    )


def _operand(
    load: Any, outer: tirx.Var, inner: tirx.Var, loop_vars: list[tirx.Var]
) -> tuple[Any, tuple[Any, ...], bool] | None:
    """``(load, tile offset, transposed)`` when ``load`` reads ``[.., outer, inner]``
    (not transposed) or ``[.., inner, outer]`` (transposed)."""
    indices = list(load.indices)
    offset = _tile_offset(indices, outer, inner, loop_vars)
    if offset is not None:
        return load, offset, False
    offset = _tile_offset(indices, inner, outer, loop_vars)
    if offset is not None:
        return load, offset, True
    return None


def c_kernel_covers(gemm: ScalarGemm) -> bool:
    """Whether the C path's vector-extension kernels run ``gemm``: fp32 products of fp32,
    fp16 or bf16 operands (half ones widened first), or fp16 products of fp16 operands.
    Other GEMMs would get the TIR register tiles, which gcc compiles slowly into
    accumulators in memory (docs/cpu.md), so on ``c`` their loops stay as written."""
    operands = {str(gemm.a.buffer.dtype), str(gemm.b.buffer.dtype)}
    if str(gemm.c.buffer.dtype) != "float32":
        return False
    if gemm.product_dtype == "float32":
        return operands <= {"float32", "float16", "bfloat16"}
    return gemm.product_dtype == "float16" and operands == {"float16"}


def lower_scalar_gemms(stmt: tirx.Stmt, *, isa: VectorISA, gemm_style: str) -> tirx.Stmt:
    """Return ``stmt`` with every recognized scalar GEMM nest replaced by the micro-kernel
    (on the C path, only those `c_kernel_covers`)."""
    views = view_pairs(stmt)

    def rewrite(loop: tirx.For) -> tirx.Stmt:
        gemm = match_scalar_gemm(loop, views)
        if gemm is None:
            return loop
        if gemm_style == "c-vector-extension" and not c_kernel_covers(gemm):
            return loop
        try:
            return emit_tile_gemm(
                gemm.a,
                gemm.b,
                gemm.c,
                gemm.m,
                gemm.n,
                gemm.k,
                transpose_a=gemm.transpose_a,
                transpose_b=gemm.transpose_b,
                isa=isa,
                style=gemm_style,
                product_dtype=gemm.product_dtype,
            )
        except ValueError:
            # A tile that statically does not fit its buffer: the loops keep their meaning.
            return loop

    result: tirx.Stmt = tvm_ffi.structural_map(stmt, (tirx.For, rewrite), order="post")
    return result


@dataclass(frozen=True)
class CpuLowerScalarGemmsPass(PrimFuncPass):
    """Scalar GEMM loop nests become the GEMM micro-kernel (module doc).

    Args:
        gemm_style: micro-kernel style: ``auto`` (``c-vector-extension`` on target
            ``c``, else ``tir``), ``c-vector-extension`` or ``tir``.
    """

    name: ClassVar[str] = "cpu-lower-scalar-gemms"
    gemm_style: str = "auto"

    def __post_init__(self) -> None:
        styles = ("auto", "c-vector-extension", "tir")
        if self.gemm_style not in styles:
            raise ValueError(
                f"cpu-lower-scalar-gemms gemm_style: expected one of {list(styles)}, "
                f"got {self.gemm_style!r}"
            )

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its scalar GEMM nests on the micro-kernel."""
        target = ctx.target
        style = self.gemm_style
        if style == "auto":
            is_c = target is not None and str(target.kind.name) == "c"
            style = "c-vector-extension" if is_c else "tir"
        return lower_scalar_gemms(body, isa=vector_isa_for_target(target), gemm_style=style)
