"""`cpu-float16-bits` (``c`` only): fp16 <-> fp32 casts as integer bit arithmetic gcc vectorizes.

gcc 12 converts ``_Float16`` to and from ``float`` one element at a time
(``vcvtph2ps``/``vcvtps2ph`` on one lane) and then vectorizes no loop holding
such a conversion: an fp16 softmax ran 15x slower on ``c`` than on ``llvm``,
whose vectorizer converts 16 lanes per instruction. `cpu-call-half-conversions`
already turns loops that only copy a row between fp16 and fp32 into calls of
F16C row converters; this pass, which runs after it, lowers every other cast
between ``float16`` and ``float32`` inside an innermost loop, whose operand
changes per iteration, into integer arithmetic on the bits, which gcc
vectorizes with the rest of the loop body. fp16 tensor elements are read and
written through a ``uint16`` view of the same memory (a ``_Float16`` load
itself keeps gcc at 4 lanes); the C toolchain makes those view accesses
``may_alias`` (`tl_codegen_cpu.c_patches`). A cast whose operand is the same in
every iteration, and any cast outside a loop, stays a hardware conversion: gcc
hoists it (the bit form of an invariant load kept gcc from vectorizing the loop).

* widening is exact for all 65536 codes: normals by re-biasing the exponent,
  subnormals by converting the mantissa to float32 and taking 24 off its
  exponent field, infinities kept, NaN quieted with its payload kept (as
  ``vcvtph2ps`` does);
* narrowing rounds to nearest, ties to even, as ``vcvtps2ph`` with
  ``_MM_FROUND_TO_NEAREST_INT`` does (and gcc's scalar conversion, and numpy):
  normals by rounding the bits at the 13 dropped mantissa bits (a carry moves
  into the exponent, up to infinity), results below fp16's smallest normal by
  one float32 addition of 0.5 that lines the value's bits up with fp16's
  subnormal unit (the addition rounds to nearest even), NaN quieted with the
  top of its payload kept, signs kept.

An integer -> fp16 cast (a dequantized weight, ``T.cast(code, "float16")``) goes
through float32 the same way: gcc converts it through double and a libgcc call
(``__truncdfhf2``) per element. Exact: every integer below 2**24 converts to
float32 exactly, and every one at or above fp16's overflow bound (65520) is
infinity either way. Casts between fp16 and float64, and fp16 -> integer, are
left to gcc. A cast whose operand reads a ``bfloat16`` buffer also stays a hardware conversion: TVM's
``BF16ComputeLegalize`` (which follows) retypes ``bfloat16`` buffers but leaves the
loads inside a ``Let`` value, which the bit form binds its operand with, on the old
buffer, and TVM's codegen then refuses the function (TileLang's DeepSeek-V4
``fp8_quant_kernel``: ``x_bf16 / scale`` narrowed to fp8).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.let_bindings import reads_bfloat16
from tl_ir.launch import rebuild_loop
from tl_passes.pass_base import PassContext, PrimFuncPass

F16 = "float16"
F32 = "float32"
U32 = "uint32"
U16 = "uint16"
I32 = "int32"
#: ``DLDataTypeCode`` of signed and unsigned integers.
_INTEGER_CODES = (0, 1)


def _u32(value: int) -> tirx.PrimExpr:
    return tirx.const(value, U32)


def _i32(value: int) -> tirx.PrimExpr:
    return tirx.const(value, I32)


def _dtype(expr: Any) -> str:
    dtype = getattr(getattr(expr, "ty", None), "dtype", None)
    return "" if dtype is None else str(dtype)


# Magnitudes (sign bit cleared) are int32 and every value computed from one stays in
# [0, 2^31): signed comparisons are what TVM's simplifier leaves as comparisons, and
# no signed shift or addition can overflow. The sign is handled in uint32.


def float16_bits_to_float32(code: Any) -> Any:
    """The float32 value of the fp16 bit pattern ``code`` (a uint32 expression, < 2^16)."""
    code_var = tirx.Var("f16_code", U32)
    magnitude = tirx.Var("f16_magnitude", I32)
    sign = tirx.LShift(tirx.BitwiseAnd(code_var, _u32(0x8000)), _u32(16))
    normal = tirx.Add(tirx.LShift(magnitude, _i32(13)), _i32((127 - 15) << 23))
    # mantissa * 2^-24: float32(mantissa) is exact; 24 comes off its exponent field.
    widened = tirx.reinterpret(I32, tirx.Cast(F32, magnitude))
    scaled = tirx.Sub(widened, _i32(24 << 23))
    subnormal = tirx.Select(tirx.EQ(magnitude, _i32(0)), _i32(0), scaled)
    bits = tirx.Select(tirx.LT(magnitude, _i32(0x400)), subnormal, normal)
    quiet = tirx.Select(tirx.GT(magnitude, _i32(0x7C00)), _i32(0x400000), _i32(0))
    special = tirx.BitwiseOr(
        tirx.BitwiseOr(tirx.LShift(magnitude, _i32(13)), _i32(0x7F800000)), quiet
    )
    bits = tirx.Select(tirx.GE(magnitude, _i32(0x7C00)), special, bits)
    result = tirx.reinterpret(F32, tirx.BitwiseOr(sign, tirx.Cast(U32, bits)))
    result = tirx.Let(magnitude, tirx.Cast(I32, tirx.BitwiseAnd(code_var, _u32(0x7FFF))), result)
    return tirx.Let(code_var, code, result)


def float32_to_float16_bits(value: Any) -> Any:
    """The fp16 bit pattern (uint16) nearest to the float32 ``value``, ties to even."""
    bits = tirx.Var("f32_bits", U32)
    magnitude = tirx.Var("f32_magnitude", I32)
    sign = tirx.BitwiseAnd(tirx.RShift(bits, _u32(16)), _u32(0x8000))
    # Normal range, on the magnitude capped at 2^16 (every larger one overflows to
    # infinity as well, and the sums below stay far from 2^31): round the bits at the
    # 13 dropped mantissa bits to nearest even, re-bias; a carry out of the mantissa
    # moves into the exponent, up to infinity.
    capped = tirx.Min(magnitude, _i32(0x47800000))
    odd = tirx.BitwiseAnd(tirx.RShift(capped, _i32(13)), _i32(1))
    rounded = tirx.RShift(tirx.Add(tirx.Add(capped, _i32(0xFFF)), odd), _i32(13))
    normal = tirx.Min(tirx.Sub(rounded, _i32((127 - 15) << 10)), _i32(0x7C00))
    # Below fp16's smallest normal: adding 0.5 (2^-1) puts fp16's subnormal unit
    # (2^-24) at float32's last mantissa bit, so the addition rounds as fp16 must.
    summed = tirx.Add(tirx.reinterpret(F32, magnitude), tirx.const(0.5, F32))
    subnormal = tirx.Sub(tirx.reinterpret(I32, summed), _i32(126 << 23))  # 0.5's bits
    finite = tirx.Select(tirx.LT(magnitude, _i32(0x38800000)), subnormal, normal)
    nan = tirx.BitwiseOr(
        tirx.BitwiseAnd(tirx.RShift(magnitude, _i32(13)), _i32(0x3FF)), _i32(0x7E00)
    )
    code = tirx.Select(tirx.GT(magnitude, _i32(0x7F800000)), nan, finite)
    result = tirx.Cast(U16, tirx.BitwiseOr(sign, tirx.Cast(U32, code)))
    result = tirx.Let(magnitude, tirx.Cast(I32, tirx.BitwiseAnd(bits, _u32(0x7FFFFFFF))), result)
    return tirx.Let(bits, tirx.reinterpret(U32, value), result)


def _is_bits_reinterpret(expr: Any) -> bool:
    """Whether ``expr`` is ``reinterpret(float16, bits)`` of a ``uint16`` value."""
    return (
        isinstance(expr, tvm.ir.Call)
        and isinstance(expr.op, tvm.ir.Op)
        and str(expr.op.name) == "tirx.reinterpret"
        and _dtype(expr.args[0]) == U16
    )


def lower_float16_casts(stmt: tirx.Stmt) -> tirx.Stmt:
    """Return ``stmt`` with every scalar fp16 <-> fp32 cast as bit arithmetic (module doc);
    fp16 loads and stores next to such a cast go through a ``uint16`` view."""
    views: list[tuple[Any, Any]] = []  # (fp16 buffer, its uint16 view)

    def view(buffer: Any) -> Any:
        for known, bits_view in views:
            if known.same_as(buffer):
                return bits_view
        bits_view = tirx.decl_buffer(
            buffer.shape,
            U16,
            name=f"{buffer.name}_bits",
            strides=buffer.strides,
            elem_offset=buffer.elem_offset,
            scope=buffer.scope(),
        )
        views.append((buffer, bits_view))
        return bits_view

    def is_f16_load(expr: Any) -> bool:
        return (
            isinstance(expr, tvm.ir.TensorLoad)
            and _dtype(expr) == F16
            and str(expr.source.dtype) == F16
        )

    def cast(expr: Any, varying: Callable[[Any], bool]) -> Any:
        target, source = _dtype(expr), _dtype(expr.value)
        if not varying(expr.value) or reads_bfloat16(expr.value):
            return expr
        if target == F32 and source == F16:
            value = expr.value
            if is_f16_load(value):
                code: Any = tirx.BufferLoad(view(value.source), list(value.indices))
            elif _is_bits_reinterpret(value):
                # An fp16 this pass made from bits: its bits, with no fp16 variable in
                # between (gcc has no vector type for one without AVX-512-FP16).
                code = value.args[0]
            else:
                code = tirx.reinterpret(U16, value)
            return float16_bits_to_float32(tirx.Cast(U32, code))
        if target == F16 and source == F32:
            return tirx.reinterpret(F16, float32_to_float16_bits(expr.value))
        if target == F16 and tvm.DataType(source).type_code in _INTEGER_CODES:
            # Through float32: exact below 2**24, and every integer at or above 65520
            # is fp16's infinity either way, so one rounding gives the same code.
            widened = tirx.Cast(F32, expr.value)
            return tirx.reinterpret(F16, float32_to_float16_bits(widened))
        return expr

    def store(node: Any) -> Any:
        value = node.value
        if str(node.buffer.dtype) != F16 or not isinstance(value, tvm.ir.Call):
            return node
        if str(value.op.name) != "tirx.reinterpret" or _dtype(value.args[0]) != U16:
            return node
        return tirx.BufferStore(view(node.buffer), value.args[0], list(node.indices))

    def innermost_loop(loop: Any) -> Any:
        if _contains(loop.body, tirx.For):
            return loop
        # A cast whose operand is the same in every iteration stays a hardware
        # conversion: gcc hoists it out of the loop (and vectorizes no loop holding
        # an invariant one lowered to bits).
        per_iteration = [loop.loop_var, *_bound_vars(loop.body)]

        def varying(expr: Any) -> bool:
            return _uses_any(expr, per_iteration)

        body = tvm_ffi.structural_map(
            loop.body,
            [(tirx.Cast, lambda e: cast(e, varying)), (tirx.BufferStore, store)],
            order="post",
        )
        return loop if body.same_as(loop.body) else rebuild_loop(loop, body=body)

    lowered = tvm_ffi.structural_map(stmt, (tirx.For, innermost_loop), order="post")
    return _declare_views(lowered, views)


def _contains(node: Any, kind: type) -> bool:
    found = False

    def visit(_: Any) -> None:
        nonlocal found
        found = True

    tvm_ffi.structural_walk(node, (kind, visit), order="post")
    return found


def _bound_vars(node: Any) -> list[Any]:
    """The variables ``Let``/``LetStmt`` bind inside ``node``."""
    bound: list[Any] = []
    tvm_ffi.structural_walk(
        node,
        [(tirx.Let, lambda n: bound.append(n.var)), (tirx.LetStmt, lambda n: bound.append(n.var))],
        order="post",
    )
    return bound


def _uses_any(expr: Any, variables: list[Any]) -> bool:
    found = False

    def visit(var: Any) -> None:
        nonlocal found
        if any(var.same_as(v) for v in variables):
            found = True

    tvm_ffi.structural_walk(expr, (tvm.ir.Var, visit), order="post")
    return found


def _declare_views(stmt: tirx.Stmt, views: list[tuple[Any, Any]]) -> tirx.Stmt:
    """``stmt`` with a ``DeclBuffer`` of each view right after its buffer's allocation or
    declaration (in the same sequence), or at the top for a kernel parameter."""
    if not views:
        return stmt
    placed: list[Any] = []

    def declarations_after(buffer: Any) -> list[Any]:
        found = [(b, v) for b, v in views if b.same_as(buffer)]
        placed.extend(b for b, _ in found)
        return [tirx.DeclBuffer(v, data=tirx.buffer_data(b)) for b, v in found]

    def seq(node: Any) -> Any:
        items: list[Any] = []
        changed = False
        for item in node.seq:
            items.append(item)
            if isinstance(item, tirx.AllocBuffer | tirx.DeclBuffer):
                declared = declarations_after(item.buffer)
                items += declared
                changed = changed or bool(declared)
        return tirx.SeqStmt(items) if changed else node

    body = tvm_ffi.structural_map(stmt, (tirx.SeqStmt, seq), order="post")
    parameters = [
        tirx.DeclBuffer(v, data=tirx.buffer_data(b))
        for b, v in views
        if not any(b.same_as(p) for p in placed)
    ]
    return tirx.SeqStmt([*parameters, body]) if parameters else body


@dataclass(frozen=True)
class CpuFloat16BitsPass(PrimFuncPass):
    """fp16 <-> fp32 casts as vectorizable bit arithmetic on ``c`` (module docstring)."""

    name: ClassVar[str] = "cpu-float16-bits"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its fp16 <-> fp32 casts lowered to bit arithmetic."""
        return lower_float16_casts(body)


__all__ = [
    "CpuFloat16BitsPass",
    "float16_bits_to_float32",
    "float32_to_float16_bits",
    "lower_float16_casts",
]
