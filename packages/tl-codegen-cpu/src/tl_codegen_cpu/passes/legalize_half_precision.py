"""`cpu-legalize-half-precision`: fp16/bf16/fp8 arithmetic is computed in fp32 (target-neutral).

Most CPUs (and several GPU targets) have no native half-precision
arithmetic; gcc and LLVM emulate it by converting every operation, and
TVM's C printer has no bf16 arithmetic at all. This pass rewrites every
arithmetic operation whose result is ``float16`` or ``bfloat16`` (``+ - *
/``, ``min``/``max`` and math intrinsics such as ``exp``) into the same
operation on ``float32`` operands, cast back to the half type. float8
arithmetic (``float8_e4m3fn``, ``float8_e5m2``) is widened the same way; the
casts it leaves are lowered to exact bit manipulation by `cpu-legalize-float8`,
which runs next. Loads,
stores and plain casts keep their types, so tensors stay half precision in
memory; each individual operation rounds once, as native half arithmetic
would (chains of operations may be slightly more accurate).

On ``llvm`` for a CPU with native fp16 arithmetic (AVX-512-FP16,
`VectorISA.native_fp16`), fp16 ``+ - * /``, ``min`` and ``max`` stay fp16: LLVM
emits ``vaddph``/``vmulph``... instead of a round trip through fp32 whose
``vcvtps2ph`` costs more than the arithmetic. The results are the same: fp32
carries 24 >= 2 * 11 + 2 significant bits, so computing one of these operations
in fp32 and rounding to fp16 gives the correctly rounded fp16 result. Math
intrinsics and bf16 are widened as before.

An operand that is an integer cast to the half type (a dequantized 4-bit weight,
``T.Cast("float16", (q << 28) >> 28)``) is widened straight from the integer when
its value provably fits the half type's exact integers (`EXACT_INTEGERS`: up to
2048 in magnitude for fp16): the cast to fp16 and back would give the same
float32, and on ``c`` each costs a dozen integer operations per element. The
proof (`integer_magnitude`) covers constants, casts from narrower integers,
``& mask``, sign extension ``(e << s) >> s``, right shifts, ``+`` and ``-``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.vector_isa import vector_isa_for_target
from tl_ir.builtin_ops import builtin_op_names, is_builtin_op
from tl_passes.pass_base import PassContext, PrimFuncPass

_BINARY = (tirx.Add, tirx.Sub, tirx.Mul, tirx.Div, tirx.Min, tirx.Max)
_COMPUTE_DTYPE = "float32"

#: Builtins that compute nothing in their dtype (a select, a bit cast, a call of a
#: function whose signature is fixed): their operands keep their type.
_KEPT_CALLS = builtin_op_names("if_then_else", "reinterpret", "call_extern")


def _dtype(expr: Any) -> str:
    # Pointer-typed expressions (address_of) carry no dtype.
    dtype = getattr(getattr(expr, "ty", None), "dtype", None)
    return "" if dtype is None else str(dtype)


#: Per half type, the largest integer magnitude below which every integer is exact.
EXACT_INTEGERS = {"float16": 1 << 11, "bfloat16": 1 << 8}

_INT32_RANGE = (-(1 << 31), (1 << 31) - 1)


def _integer_range(dtype: str) -> tuple[int, int] | None:
    if not dtype.startswith(("int", "uint")):
        return None
    bits = int(dtype.lstrip("uint") or 0)
    if bits <= 0 or bits > 32:
        return None
    if dtype.startswith("uint"):
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def _bounds(expr: Any) -> tuple[int, int] | None:
    """Sound integer bounds of an int32 (or narrower) ``expr``, or None if not proven."""
    own = _integer_range(_dtype(expr))
    if own is None:
        return None
    found = _proven(expr)
    if found is None:
        return own
    low, high = found
    return (low, high) if own[0] <= low and high <= own[1] else own


def _proven(expr: Any) -> tuple[int, int] | None:
    if isinstance(expr, tirx.IntImm):
        return int(expr.value), int(expr.value)
    if isinstance(expr, tirx.Cast):
        inner = _integer_range(_dtype(expr.value))
        outer = _integer_range(_dtype(expr))
        if inner is None or outer is None or inner[0] < outer[0] or inner[1] > outer[1]:
            return None  # a narrowing cast wraps
        return _bounds(expr.value)
    if isinstance(expr, tirx.BitwiseAnd):
        masks = [int(e.value) for e in (expr.a, expr.b) if isinstance(e, tirx.IntImm)]
        return (0, max(masks)) if masks and max(masks) >= 0 else None
    if isinstance(expr, tirx.RShift) and isinstance(expr.b, tirx.IntImm):
        shift = int(expr.b.value)
        if not 0 <= shift < 32:
            return None
        if (
            isinstance(expr.a, tirx.LShift)
            and _dtype(expr) == "int32"
            and tvm_ffi.structural_equal(expr.a.b, expr.b)
            and shift > 0
        ):
            return -(1 << (31 - shift)), (1 << (31 - shift)) - 1  # sign extension
        inner_bounds = _bounds(expr.a)
        if inner_bounds is None:
            return None
        return inner_bounds[0] >> shift, inner_bounds[1] >> shift
    if isinstance(expr, tirx.Add | tirx.Sub):
        a, b = _bounds(expr.a), _bounds(expr.b)
        if a is None or b is None:
            return None
        if isinstance(expr, tirx.Add):
            low, high = a[0] + b[0], a[1] + b[1]
        else:
            low, high = a[0] - b[1], a[1] - b[0]
        return (low, high) if _INT32_RANGE[0] <= low and high <= _INT32_RANGE[1] else None
    return None


def integer_magnitude(expr: Any) -> int | None:
    """The largest ``|value|`` an integer ``expr`` can take, as far as the rules of the
    module docstring prove it (its dtype's range otherwise); None if ``expr`` is not an
    integer of at most 32 bits."""
    found = _bounds(expr)
    return None if found is None else max(abs(found[0]), abs(found[1]))


def _widen(expr: Any) -> Any:
    if isinstance(expr, tirx.Cast) and _dtype(expr) in EXACT_INTEGERS:
        magnitude = integer_magnitude(expr.value)
        if magnitude is not None and magnitude <= EXACT_INTEGERS[_dtype(expr)]:
            return tirx.Cast(_COMPUTE_DTYPE, expr.value)  # exact in the half type
    return tirx.Cast(_COMPUTE_DTYPE, expr)


def legalize_half_precision(
    stmt: tirx.Stmt, dtypes: tuple[str, ...], native: tuple[str, ...] = ()
) -> tirx.Stmt:
    """Return ``stmt`` with arithmetic on ``dtypes`` computed in float32 (see the module);
    ``+ - * /``, min and max on the ``native`` dtypes stay as they are."""

    def binary(expr: Any) -> Any:
        dtype = _dtype(expr)
        if dtype not in dtypes or dtype in native:
            return expr
        return tirx.Cast(dtype, type(expr)(_widen(expr.a), _widen(expr.b)))

    def call(expr: Any) -> Any:
        op = expr.op
        # Both namespaces: TVM 0.27 registers some math under prim. (prim.ceil, prim.log2).
        if not is_builtin_op(op):
            return expr
        dtype = _dtype(expr)
        if dtype not in dtypes or not expr.args:
            return expr
        if any(_dtype(arg) != dtype for arg in expr.args):
            return expr
        if str(op.name) in _KEPT_CALLS:
            return expr
        widened = tvm.ir.Call(op, [_widen(arg) for arg in expr.args], ret_ty=_COMPUTE_DTYPE)
        return tirx.Cast(dtype, widened)

    return tvm_ffi.structural_map(
        stmt, [*((cls, binary) for cls in _BINARY), (tvm.ir.Call, call)], order="post"
    )


@dataclass(frozen=True)
class CpuLegalizeHalfPrecisionPass(PrimFuncPass):
    """Compute half-precision arithmetic in float32.

    Args:
        dtypes: the element types whose arithmetic is widened.
    """

    name: ClassVar[str] = "cpu-legalize-half-precision"
    dtypes: tuple[str, ...] = field(default=("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"))

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its half-precision arithmetic widened."""
        target = ctx.target
        on_llvm = target is not None and str(target.kind.name) == "llvm"
        native_fp16 = on_llvm and vector_isa_for_target(target).native_fp16
        native: tuple[str, ...] = ("float16",) if native_fp16 else ()
        return legalize_half_precision(body, self.dtypes, native)
