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


def _widen(expr: Any) -> Any:
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
