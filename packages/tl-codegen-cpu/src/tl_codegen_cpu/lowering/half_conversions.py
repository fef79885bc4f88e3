"""Half-precision inputs on the C path: the CPU's own conversions in the GEMM micro-kernel.

gcc 12 does not vectorize ``(float)`` of a ``_Float16``: a loop converting fp16
elements to fp32 issues one scalar conversion per element (``vcvtph2ps`` /
``vcvtsh2ss``), and the TIR-loop micro-kernel then keeps its accumulators in
memory. The fp16 GEMM on ``c`` ran about 100x slower than on ``llvm``
(benchmarks/fp16_gemm_cpu.py).

``include/tl_half.h`` (`tl_codegen_cpu.c_headers.half_prelude`, inserted after
``tl_gemm_f32.h`` whose types and limits it uses) defines ``tl_gemm_f16_f32x{4,8,16}``: the
vector-extension micro-kernel of `gemm_microkernel` (same arguments, fp32
accumulators in registers) whose A and B tiles are fp16. B's rows are
converted a vector at a time and A's elements one at a time, by what the
compiling CPU offers, chosen by gcc's predefined macros under
``-march=native``: F16C's ``vcvtph2ps`` (``_mm_cvtph_ps``/``_mm256_cvtph_ps``,
AVX-512F's ``_mm512_cvtph_ps`` for 16 lanes, ``_cvtsh_ss`` for one element);
without F16C an exact integer conversion (sign, exponent rebias, subnormals
through an exact fp32 multiply, inf/NaN kept).

`cpu-call-half-conversions` (`c` only, ``passes/half_conversions.py``) turns every loop that only converts
a contiguous row between fp16 and fp32 (``dst[i] = float(src[i])`` or
``dst[i] = half(src[i])``: the widening of GEMM operands, fp32 results stored
as fp16) into a call of ``tl_cvt_f16_to_f32`` / ``tl_cvt_f32_to_f16``, which
convert 16 (AVX-512F) or 8 (F16C) elements per instruction; the narrowing
rounds to nearest even (``_MM_FROUND_TO_NEAREST_INT``), as gcc's scalar
conversion and numpy do.

Widening fp16 to fp32 is exact, so results are bit-identical to the scalar
path; rounding back to fp16 (round to nearest even) happens where the kernel
stores fp16, unchanged. bf16 tiles keep the TIR loops: TVM's C path stores
block-local bf16 arrays as fp32 already (its bf16 legalization).
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_passes.buffer_rewrite import substitute_vars

#: The half-precision input formats the C micro-kernel takes: dtype -> name infix.
C_HALF_GEMM_DTYPES: dict[str, str] = {"float16": "f16"}

#: Operand dtypes whose products the C micro-kernel rounds to that dtype before adding
#: them in fp32 (``tl_gemm_f16r_f32x<lanes>``): dtype -> name infix.
C_HALF_PRODUCT_DTYPES: dict[str, str] = {"float16": "f16r"}

#: (source dtype, destination dtype) -> the C function converting a contiguous row.
ROW_CONVERSIONS: dict[tuple[str, str], str] = {
    ("float16", "float32"): "tl_cvt_f16_to_f32",
    ("float32", "float16"): "tl_cvt_f32_to_f16",
}

#: Rows shorter than this stay loops (a call does not pay for itself).
_MIN_ROW = 8


def _row_start(indices: Any, var: Any) -> list[Any] | None:
    """``indices`` with the loop Var at 0 when only the last index moves with it, by 1."""
    *outer, last = list(indices)
    if any(uses_var(i, var) for i in outer):
        return None
    if isinstance(last, tvm.ir.Var) and last.same_as(var):
        base: Any = tirx.const(0, "int32")
    elif isinstance(last, tirx.Add) and isinstance(last.b, tvm.ir.Var) and last.b.same_as(var):
        base = last.a
    elif isinstance(last, tirx.Add) and isinstance(last.a, tvm.ir.Var) and last.a.same_as(var):
        base = last.b
    else:
        # Any other index linear in the loop variable with step 1 (``chunk * 16 + i + 32``).
        analyzer = tvm.sym.Analyzer()
        zero = tirx.const(0, str(var.dtype))
        base = analyzer.simplify(substitute_vars(tirx.Evaluate(last), {var: zero}).value)
        step = analyzer.simplify(last - base)
        if not (isinstance(step, tvm.ir.Var) and step.same_as(var)):
            return None
    return None if uses_var(base, var) else [*outer, base]


def uses_var(expr: Any, var: Any) -> bool:
    """Whether ``expr`` refers to ``var``."""
    found = False

    def visit(v: Any) -> None:
        nonlocal found
        if v.same_as(var):
            found = True

    tvm_ffi.structural_walk(expr, (tvm.ir.Var, visit), order="post")
    return found


def conversion_call(loop: Any) -> Any | None:
    """The ``tl_cvt_*`` call replacing ``loop``, or None when it is not a contiguous
    fp16 <-> fp32 conversion of one row starting at the loop's minimum."""
    store = loop.body
    if not isinstance(store, tirx.BufferStore) or not isinstance(store.value, tirx.Cast):
        return None
    load = store.value.value
    if not isinstance(load, tvm.ir.TensorLoad):
        return None
    name = ROW_CONVERSIONS.get((str(load.source.dtype), str(store.buffer.dtype)))
    extent = loop.extent
    if name is None or not isinstance(extent, tirx.IntImm) or int(extent.value) < _MIN_ROW:
        return None
    if load.source.strides or store.buffer.strides or not _is_zero(loop.min):
        return None
    src, dst = _row_start(load.indices, loop.loop_var), _row_start(store.indices, loop.loop_var)
    if src is None or dst is None:
        return None
    # Access pointers carry the row's extent: TVM sizes block-local arrays by the
    # regions their accesses cover (an address_of covers one element).
    return tirx.Evaluate(
        tirx.call_extern(
            "int32",
            name,
            load.source.access_ptr("r", offset=_flat(load.source, src), extent=extent),
            store.buffer.access_ptr("w", offset=_flat(store.buffer, dst), extent=extent),
            extent,
        )
    )


#: Source dtype -> the C function copying a transposed tile into a row-major fp32 one.
TRANSPOSES: dict[str, str] = {"float16": "tl_cvt_f16_to_f32_t", "float32": "tl_transpose_f32"}


def transpose_call(buffer: Any, offset: list[Any], packed: Any, rows: int, cols: int) -> Any:
    """The C call setting ``packed[r, c] = float(buffer tile[c, r])`` for the
    ``[cols, rows]`` tile of ``buffer`` (fp16 or fp32, unstrided) at ``offset``:
    8 x 8 register blocks (`TRANSPOSES`) instead of a strided gather of one
    element at a time, which gcc does not vectorize."""
    pitch = buffer.shape[-1]
    span = (cols - 1) * pitch + rows
    return tirx.Evaluate(
        tirx.call_extern(
            "int32",
            TRANSPOSES[str(buffer.dtype)],
            buffer.access_ptr("r", offset=_flat(buffer, offset), extent=span),
            pitch,
            packed.access_ptr("w", offset=0, extent=rows * cols),
            cols,
            rows,
            cols,
        )
    )


def _flat(buffer: Any, indices: list[Any]) -> Any:
    offset: Any = None
    for extent, index in zip(buffer.shape, indices, strict=True):
        offset = index if offset is None else offset * extent + index
    return offset


def _is_zero(value: Any) -> bool:
    return isinstance(value, tirx.IntImm) and int(value.value) == 0
