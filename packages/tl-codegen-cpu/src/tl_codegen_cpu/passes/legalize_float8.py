"""`cpu-legalize-float8`: float8 <-> float casts as exact integer bit manipulation.

The CPU targets have no float8 instructions, and TVM's own float8 lowering
(its compute/storage legalization, run when a module is built) decodes zero
as a tiny normal number, mishandles the sign in C's promoted-int arithmetic
and ignores subnormals and NaN. This pass lowers every ``Cast`` from or to
``float8_e4m3fn`` / ``float8_e5m2`` itself, before TVM sees it, into
``uint32`` arithmetic on the bits (`tirx.reinterpret` of the one-byte code),
so both ``c`` and ``llvm`` compute what the OCP FP8 format defines, with the
same results as ``ml_dtypes``:

* widening (fp8 -> float32) is exact for every one of the 256 codes: zero
  and -0.0, subnormals, the largest values, e5m2's infinities, NaN (e4m3fn's
  ``0x7f``/``0xff``, e5m2's codes above the infinities) as a quiet NaN;
* narrowing (float32 -> fp8) rounds to nearest, ties to even, subnormals
  included, and keeps the sign of -0.0 and of NaN. Beyond the largest
  finite value (after rounding) e4m3fn, which has no infinity, gives NaN and
  e5m2 gives infinity; a NaN gives e4m3fn's ``0x7f`` / e5m2's ``0x7e`` with
  the input's sign.

A constant is converted here, at compile time, with ``ml_dtypes`` (the same
rounding as the run-time conversion): an fp8 constant (``T.float8_e4m3fn(0)``,
``A[i] = 0`` on an fp8 tensor) becomes its one-byte code, ``reinterpret`` of a
``uint8`` constant, and a cast of a constant to or from fp8 becomes the converted
constant. TVM's own legalization would otherwise convert it in the built code:
``c`` printed ``*(uint32_t *)(&(0.000000e+00f))`` (the address of a constant, a
gcc error) and ``llvm`` refused the conversion once the store was vectorized
(``if_then_else can only take scalar condition``).

Other source or target types go through float32: widening is exact, so
fp8 -> float16/bfloat16/float64/int casts round once; a float64 or integer
source is rounded to float32 first, then to fp8 (a double rounding that can
differ from a direct rounding only on an exact float32 tie).

A vector loop that stores one value for all its lanes into an fp8 tensor (a fill,
``A[i] = T.Cast(fp8, s)``, ``A[i] = B[0]``) runs as a scalar loop: TVM's vectorizer
would broadcast the fp8 value, and TVM's float8 legalization widens an fp8
broadcast to float32 and narrows it back with a scalar-only ``if_then_else``,
which ``llvm`` refuses for vector lanes (`serialize_uniform_float8_stores`; the
compiler still vectorizes the plain byte stores).

Arithmetic whose result is fp8 is widened to float32 by
`cpu-legalize-half-precision` (it lists the fp8 dtypes); this pass runs after
it and lowers the casts that pass introduced as well. Loads, stores and
copies of fp8 keep their one-byte type, and a select of fp8 values (the guard
of a partial tile or of a load at a run-time offset, ``if_then_else(inside,
A[i], 0)``) chooses between their codes, which TVM's legalization would
otherwise widen to float32 (`_select_codes`); tiles the kernel allocates in fp8 are
stored as ``uint8`` (`float8_local_storage`), so TVM's own legalization never
widens them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import ml_dtypes
import numpy as np
import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.let_bindings import bind_computed
from tl_codegen_cpu.passes.float8_local_storage import code_of, store_float8_tiles_as_bytes
from tl_ir.builtin_ops import builtin_op_name
from tl_ir.launch import rebuild_loop
from tl_passes.pass_base import PassContext, PrimFuncPass


@dataclass(frozen=True)
class Float8Format:
    """The layout of one float8 format: a sign bit, ``exponent_bits``, ``mantissa_bits``.

    Attributes:
        exponent_bits: width of the exponent field.
        mantissa_bits: width of the mantissa field.
        bias: the exponent bias.
        max_finite_code: the largest finite magnitude code (sign bit clear).
        overflow_code: the magnitude code of an overflow (NaN or infinity).
        nan_code: the magnitude code a NaN converts to.
        has_infinity: whether an all-ones exponent with zero mantissa is infinity.
    """

    exponent_bits: int
    mantissa_bits: int
    bias: int
    max_finite_code: int
    overflow_code: int
    nan_code: int
    has_infinity: bool


#: The float8 dtypes lowered by this pass.
FLOAT8_FORMATS: dict[str, Float8Format] = {
    # No infinity; 0x7f is the only NaN magnitude; 448 is the largest value.
    "float8_e4m3fn": Float8Format(4, 3, 7, 0x7E, 0x7F, 0x7F, has_infinity=False),
    # IEEE-like: 0x7c is infinity, 0x7d..0x7f are NaN; 57344 is the largest value.
    "float8_e5m2": Float8Format(5, 2, 15, 0x7B, 0x7C, 0x7E, has_infinity=True),
}

_IF_THEN_ELSE = builtin_op_name("if_then_else")

_F32_MANTISSA_BITS = 23
_F32_BIAS = 127
_F32_QUIET_NAN = 0x7FC00000
_F32_INFINITY = 0x7F800000


def _dtype(expr: Any) -> str:
    dtype = getattr(getattr(expr, "ty", None), "dtype", None)
    return "" if dtype is None else str(dtype)


class _Builder:
    """Integer expressions of one lane shape (scalar or vector of ``lanes``)."""

    def __init__(self, lanes: int) -> None:
        self.lanes = lanes

    def dtype(self, scalar: str) -> str:
        return scalar if self.lanes == 1 else f"{scalar}x{self.lanes}"

    def u32(self, value: int) -> Any:
        scalar = tirx.const(value, "uint32")
        return scalar if self.lanes == 1 else tirx.Broadcast(scalar, self.lanes)

    def i32(self, value: int) -> Any:
        scalar = tirx.const(value, "int32")
        return scalar if self.lanes == 1 else tirx.Broadcast(scalar, self.lanes)

    def signed(self, value: Any) -> Any:
        return self.i32(value) if isinstance(value, int) else tirx.Cast(self.dtype("int32"), value)

    def compare(self, op: Any, a: Any, b: Any) -> Any:
        """``op(a, b)`` on two uint32 values below 2**31, compared as int32: TVM's
        canonical simplifier rewrites a uint32 ``x < c`` as ``x - c < 0`` and stops the
        build when ``x`` folds to 0 (a fp8 conversion of a value that became a
        constant after this pass)."""
        return op(self.signed(a), self.signed(b))

    def unsigned(self, value: Any) -> Any:
        return tirx.Cast(self.dtype("uint32"), value)

    def shr(self, value: Any, amount: int | Any) -> Any:
        return tirx.RShift(value, self.u32(amount) if isinstance(amount, int) else amount)

    def shl(self, value: Any, amount: int | Any) -> Any:
        return tirx.LShift(value, self.u32(amount) if isinstance(amount, int) else amount)

    def and_(self, value: Any, mask: int) -> Any:
        return tirx.BitwiseAnd(value, self.u32(mask))

    def or_(self, a: Any, b: Any) -> Any:
        return tirx.BitwiseOr(a, b)

    def minus(self, value: Any, amount: int) -> Any:
        """``value - amount`` modulo 2**32, written as an addition: TVM's constant
        folder stops the build on a uint subtraction whose minuend folds to 0 (a
        branch the select does not take, once the value is a constant)."""
        return tirx.Add(value, self.u32(-amount % (1 << 32)))


def _decode(code8: Any, fmt: Float8Format, lanes: int) -> Any:
    """float32 value of the fp8 ``code8`` (a uint8 expression)."""
    code32 = tirx.Cast(_Builder(lanes).dtype("uint32"), code8)
    return bind_computed(code32, "fp8_code", lambda code: _decode_code(code, fmt, lanes))


def _decode_code(code: Any, fmt: Float8Format, lanes: int) -> Any:
    b = _Builder(lanes)
    m = fmt.mantissa_bits
    sign = b.shl(b.and_(code, 0x80), 24)
    magnitude = b.and_(code, 0x7F)
    # A normal code's exponent and mantissa fields, moved to float32's places,
    # with the exponent re-biased.
    normal = tirx.Add(
        b.shl(magnitude, _F32_MANTISSA_BITS - m),
        b.u32((_F32_BIAS - fmt.bias) << _F32_MANTISSA_BITS),
    )
    # A subnormal's value is its mantissa times 2**(1 - bias - m): the mantissa
    # converted to float32 (exact) with that power of two taken off its exponent
    # in the bits (no float constant, whose printed decimal could round), and
    # zero kept as zero.
    widened_mantissa = tirx.reinterpret(b.dtype("uint32"), tirx.Cast(b.dtype("float32"), magnitude))
    scaled = b.minus(widened_mantissa, (fmt.bias + m - 1) << _F32_MANTISSA_BITS)
    subnormal = tirx.Select(b.compare(tirx.EQ, magnitude, 0), b.u32(0), scaled)
    bits = tirx.Select(b.compare(tirx.LT, magnitude, 1 << m), subnormal, normal)
    if fmt.has_infinity:
        special_from = ((1 << fmt.exponent_bits) - 1) << m
        special = tirx.Select(
            b.compare(tirx.EQ, magnitude, special_from), b.u32(_F32_INFINITY), b.u32(_F32_QUIET_NAN)
        )
        bits = tirx.Select(b.compare(tirx.GE, magnitude, special_from), special, bits)
    else:
        bits = tirx.Select(b.compare(tirx.EQ, magnitude, 0x7F), b.u32(_F32_QUIET_NAN), bits)
    return tirx.reinterpret(b.dtype("float32"), b.or_(sign, bits))


def _encode(value: Any, fmt: Float8Format, lanes: int) -> Any:
    """The fp8 code (uint8) nearest to the float32 ``value``, ties to even."""
    bits32 = tirx.reinterpret(_Builder(lanes).dtype("uint32"), value)
    return bind_computed(bits32, "f32_bits", lambda bits: _encode_bits(bits, fmt, lanes))


def _encode_bits(bits: Any, fmt: Float8Format, lanes: int) -> Any:
    b = _Builder(lanes)
    m = fmt.mantissa_bits
    drop = _F32_MANTISSA_BITS - m  # float32 mantissa bits below fp8's
    sign = b.and_(b.shr(bits, 24), 0x80)
    magnitude = b.and_(bits, 0x7FFFFFFF)
    # Normal range: round the magnitude's bits to nearest even at `drop`, then
    # re-bias the exponent; a carry out of the mantissa bumps the exponent.
    odd = b.and_(b.shr(magnitude, drop), 1)
    rounded = b.shr(tirx.Add(tirx.Add(magnitude, b.u32((1 << (drop - 1)) - 1)), odd), drop)
    rebias = (_F32_BIAS - fmt.bias) << m
    # Below the smallest normal the subtraction would wrap: those take the subnormal path.
    normal = b.minus(rounded, rebias)
    # Subnormal range: the significand (implicit bit set) shifted right so that
    # one unit is fp8's smallest subnormal, rounded to nearest even.
    exponent = b.shr(magnitude, _F32_MANTISSA_BITS)
    significand = b.or_(b.and_(magnitude, 0x7FFFFF), b.u32(1 << _F32_MANTISSA_BITS))
    shift_at_exponent_zero = _F32_BIAS - fmt.bias + 1 + drop
    # Clamped to 1..31 for every input (unselected lanes included): a shift by
    # the word size or more is undefined in C. The amounts are computed in int32
    # from the clamped exponent, and the remainder's mask without a subtraction:
    # TVM's canonical simplifier stops the build on a uint32 subtraction whose
    # minuend folds to 0, which it produced from these once the value was a constant.
    clamped_exponent = tirx.Max(
        tirx.Min(exponent, b.u32(shift_at_exponent_zero - 1)), b.u32(shift_at_exponent_zero - 31)
    )
    signed_exponent = b.signed(clamped_exponent)
    shift = b.unsigned(tirx.Sub(b.i32(shift_at_exponent_zero), signed_exponent))
    shift_less_one = b.unsigned(tirx.Sub(b.i32(shift_at_exponent_zero - 1), signed_exponent))
    quotient = b.shr(significand, shift)
    remainder = tirx.BitwiseAnd(significand, tirx.BitwiseNot(b.shl(b.u32(0xFFFFFFFF), shift)))
    half = b.shl(b.u32(1), shift_less_one)
    round_up = tirx.Or(
        b.compare(tirx.GT, remainder, half),
        tirx.And(b.compare(tirx.EQ, remainder, half), b.compare(tirx.EQ, b.and_(quotient, 1), 1)),
    )
    subnormal = tirx.Select(round_up, tirx.Add(quotient, b.u32(1)), quotient)
    min_normal_bits = (_F32_BIAS - fmt.bias + 1) << _F32_MANTISSA_BITS
    finite = tirx.Select(b.compare(tirx.LT, magnitude, min_normal_bits), subnormal, normal)
    finite = tirx.Select(
        b.compare(tirx.GT, finite, fmt.max_finite_code), b.u32(fmt.overflow_code), finite
    )
    code = tirx.Select(b.compare(tirx.GT, magnitude, _F32_INFINITY), b.u32(fmt.nan_code), finite)
    return tirx.Cast(b.dtype("uint8"), b.or_(sign, code))


def _lanes(dtype: str) -> int:
    return int(tvm.DataType(dtype).lanes)


def _scalar(dtype: str) -> str:
    return str(tvm.DataType(dtype).with_lanes(1)) if _lanes(dtype) > 1 else dtype


def float8_code(value: float, dtype: str) -> int:
    """The one-byte code of ``value`` in the fp8 ``dtype`` (a `FLOAT8_FORMATS` key).

    Rounded to float32 first, then to nearest even in ``dtype``, as the run-time
    narrowing (`legalize_float8_casts`) rounds a float64 or integer value; NaN keeps
    its sign, and a value beyond the largest finite one gives e4m3fn's NaN or e5m2's
    infinity.

    Raises:
        ValueError: ``dtype`` is not a `FLOAT8_FORMATS` key.
    """
    if dtype not in FLOAT8_FORMATS:
        raise ValueError(f"float8_code dtype: expected one of {list(FLOAT8_FORMATS)}, got {dtype}")
    with np.errstate(over="ignore", invalid="ignore"):
        single = np.array([value], np.float32)
        return int(single.astype(getattr(ml_dtypes, dtype)).view(np.uint8)[0])


def float8_value(code: int, dtype: str) -> float:
    """The value of the one-byte ``code`` of the fp8 ``dtype`` (exact; NaN for a NaN code).

    Raises:
        ValueError: ``dtype`` is not a `FLOAT8_FORMATS` key.
    """
    if dtype not in FLOAT8_FORMATS:
        raise ValueError(f"float8_value dtype: expected one of {list(FLOAT8_FORMATS)}, got {dtype}")
    return float(np.array([code], np.uint8).view(getattr(ml_dtypes, dtype))[0])


def _constant_code(expr: Any) -> int | None:
    """The code of a scalar fp8 constant as this pass writes it (``reinterpret`` of a
    ``uint8`` constant), or None."""
    if not isinstance(expr, tvm.ir.Call) or str(getattr(expr.op, "name", "")) != "tirx.reinterpret":
        return None
    (operand,) = expr.args
    if isinstance(operand, tirx.IntImm) and _dtype(operand) == "uint8":
        return int(operand.value)
    return None


def _code_constant(code: int, dtype: str) -> Any:
    return tirx.reinterpret(dtype, tirx.const(code, "uint8"))


def _fold_constant_cast(expr: Any, target: str, source: str) -> Any | None:
    """``expr`` (a scalar cast from or to fp8) computed now when its operand is a
    constant, or None. A cast to fp8 gives the code of the value; a cast from fp8, its
    value as float32 (cast on to ``target``, which later passes fold)."""
    value = expr.value
    if source in FLOAT8_FORMATS:
        code = _constant_code(value)
        if code is None:
            return None
        number = float8_value(code, source)
    elif isinstance(value, (tirx.IntImm, tirx.FloatImm)):
        number = float(value.value)
    else:
        return None
    if target in FLOAT8_FORMATS:
        return _code_constant(float8_code(number, target), target)
    widened = tirx.FloatImm("float32", float(np.float32(number)))
    return widened if target == "float32" else tirx.Cast(target, widened)


def _select_codes(expr: Any) -> Any:
    """``expr`` (a ``Select`` or ``if_then_else``) choosing between the ``uint8`` codes of
    its fp8 values, reinterpreted as fp8; other expressions unchanged.

    TVM's float8 legalization counts a select of fp8 values as arithmetic: it widens
    the select to float32 with its own conversion, so the ``reinterpret`` to ``uint8``
    of a guarded load (``if_then_else(inside, A[i], 0)`` of a partial tile, a run-time
    offset) stored into a byte tile no longer matched in size and the build stopped
    ("Reinterpret requires size match"). A choice moves no value through arithmetic:
    choosing the codes keeps every bit (NaN payloads, -0.0) and gives TVM nothing to
    widen.
    """
    dtype = _dtype(expr)  # "" for a pointer (address_of)
    if not dtype or _scalar(dtype) not in FLOAT8_FORMATS:
        return expr
    code_dtype = _Builder(_lanes(dtype)).dtype("uint8")
    if isinstance(expr, tirx.Select):
        chosen = tirx.Select(expr.condition, code_of(expr.true_value), code_of(expr.false_value))
    elif isinstance(expr.op, tvm.ir.Op) and str(expr.op.name) == _IF_THEN_ELSE:
        condition, true_value, false_value = expr.args
        chosen = tvm.ir.Call(
            expr.op, [condition, code_of(true_value), code_of(false_value)], ret_ty=code_dtype
        )
    else:
        return expr
    return tirx.reinterpret(dtype, chosen)


def legalize_float8_casts(stmt: tirx.Stmt) -> tirx.Stmt:
    """Return ``stmt`` with every cast from or to a `FLOAT8_FORMATS` dtype as bit manipulation.

    Casts between two fp8 dtypes go through float32 (exact); a cast whose
    source and target are the same fp8 dtype is left alone. Every scalar fp8
    constant becomes its code (``reinterpret`` of a ``uint8`` constant,
    `float8_code`), and a scalar cast of a constant from or to fp8 is computed
    at compile time, with the run-time conversion's result. A ``Select`` or
    ``if_then_else`` of fp8 values chooses between their codes (`_select_codes`), and
    a comparison of fp8 values compares their float32 values (exact).
    """

    def constant(expr: Any) -> Any:
        dtype = _dtype(expr)
        if dtype not in FLOAT8_FORMATS:
            return expr
        return _code_constant(float8_code(float(expr.value), dtype), dtype)

    def cast(expr: Any) -> Any:
        target = _dtype(expr)
        source = _dtype(expr.value)
        target_format = FLOAT8_FORMATS.get(_scalar(target))
        source_format = FLOAT8_FORMATS.get(_scalar(source))
        if target_format is None and source_format is None:
            return expr
        if target == source:
            return expr
        folded = _fold_constant_cast(expr, target, source)
        if folded is not None:
            return folded
        lanes = _lanes(target)
        f32 = "float32" if lanes == 1 else f"float32x{lanes}"
        value = expr.value
        if source_format is not None:
            code = tirx.reinterpret("uint8" if lanes == 1 else f"uint8x{lanes}", value)
            value = _decode(code, source_format, lanes)
        if target_format is None:
            return value if target == f32 else tirx.Cast(target, value)
        if _dtype(value) != f32:
            value = tirx.Cast(f32, value)
        return tirx.reinterpret(target, _encode(value, target_format, lanes))

    def widened(value: Any) -> Any:
        dtype = _dtype(value)
        lanes = _lanes(dtype)
        code = tirx.reinterpret("uint8" if lanes == 1 else f"uint8x{lanes}", value)
        return _decode(code, FLOAT8_FORMATS[_scalar(dtype)], lanes)

    def comparison(expr: Any) -> Any:
        # Compared as their float32 values: on the codes, NaN compared as a number,
        # 0.0 == -0.0 was false, and c compared negative values as bytes.
        if FLOAT8_FORMATS.get(_scalar(_dtype(expr.a))) is None:
            return expr
        return type(expr)(widened(expr.a), widened(expr.b))

    # Post order: an fp8 constant is a code before the cast, comparison or select that
    # reads it is visited.
    return tvm_ffi.structural_map(
        stmt,
        [
            (tirx.FloatImm, constant),
            (tirx.Cast, cast),
            ((tirx.LT, tirx.LE, tirx.GT, tirx.GE, tirx.EQ, tirx.NE), comparison),
            (tirx.Select, _select_codes),
            (tvm.ir.Call, _select_codes),
        ],
        order="post",
    )


def _defined_vars(stmt: tirx.Stmt) -> list[Any]:
    """The variables ``stmt`` binds (``Bind``, ``LetStmt``, ``Let``) and its loop variables."""
    found: list[Any] = []

    def binding(node: Any) -> None:
        found.append(node.var)

    def loop(node: Any) -> None:
        found.append(node.loop_var)

    tvm_ffi.structural_walk(
        stmt, [(tirx.Bind, binding), (tirx.LetStmt, binding), (tirx.Let, binding), (tirx.For, loop)]
    )
    return found


def _mentions(expr: Any, variables: list[Any]) -> bool:
    found = False

    def visit(var: Any) -> None:
        nonlocal found
        if any(var.same_as(v) for v in variables):
            found = True

    tvm_ffi.structural_walk(expr, (tvm.ir.Var, visit), order="pre")
    return found


def serialize_uniform_float8_stores(
    stmt: tirx.Stmt, dtypes: frozenset[str] = frozenset(FLOAT8_FORMATS)
) -> tirx.Stmt:
    """Return ``stmt`` with every vectorized loop that stores a lane-uniform value into a
    buffer of one of ``dtypes`` (by default the `FLOAT8_FORMATS`) made serial.

    A value is lane-uniform when it mentions neither the loop variable nor a variable
    bound inside the loop (TVM's vectorizer would broadcast it, see the module). Other
    loops are unchanged.
    """

    def loop(node: Any) -> Any:
        if node.kind != tirx.ForKind.VECTORIZED:
            return node
        varying = [node.loop_var, *_defined_vars(node.body)]
        uniform = False

        def store(candidate: Any) -> None:
            nonlocal uniform
            dtype = str(candidate.buffer.ty.dtype)
            if _scalar(dtype) in dtypes and not _mentions(candidate.value, varying):
                uniform = True

        tvm_ffi.structural_walk(node.body, (tirx.BufferStore, store), order="pre")
        return rebuild_loop(node, kind=tirx.ForKind.SERIAL) if uniform else node

    return tvm_ffi.structural_map(stmt, (tirx.For, loop), order="post")


@dataclass(frozen=True)
class CpuLegalizeFloat8Pass(PrimFuncPass):
    """Lower float8 <-> float casts to exact integer bit manipulation (see the module)."""

    name: ClassVar[str] = "cpu-legalize-float8"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its float8 casts lowered, its float8 tiles stored as
        bytes and its vector loops that store one fp8 value to every lane serial."""
        body = store_float8_tiles_as_bytes(legalize_float8_casts(body), frozenset(FLOAT8_FORMATS))
        return serialize_uniform_float8_stores(body)
