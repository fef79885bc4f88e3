"""`cpu-legalize-intrinsics`: math intrinsics TVM's C code generator cannot print, rewritten.

TVM 0.27's C codegen has no rule for ``fabs`` (``T.abs`` on floats, used by
``reduce_abssum``/``reduce_absmax``), ``exp2`` or ``exp10``, nor for ``assume`` (it fails with "Unresolved call"). This pass rewrites
them with what every target prints: ``abs(x)`` -> ``x`` with its sign bit cleared,
``exp2(x)`` -> ``exp(x * ln 2)``, ``exp10(x)`` -> ``exp(x * ln 10)``, and
``T.assume(cond)`` (an optimizer hint) -> nothing. By default it runs only for target
``c``; LLVM lowers all three itself. Half-precision calls are widened
earlier by `cpu-legalize-half-precision`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_passes.pass_base import PassContext, PrimFuncPass

#: Target kinds whose code generator needs the rewrite.
DEFAULT_KINDS: tuple[str, ...] = ("c",)


#: Float dtype -> (the integer type of its bits, the mask clearing the sign bit).
_SIGN_CLEARED = {"float32": ("int32", 0x7FFFFFFF), "float64": ("int64", 0x7FFFFFFFFFFFFFFF)}


def _absolute(x: Any, dtype: str) -> Any:
    # The sign bit cleared: |-0.0| is +0.0 (a select `x < 0 ? -x : x` kept -0.0, so
    # 1 / T.abs(x) was -inf on c where llvm gave +inf), and NaN stays NaN.
    if dtype not in _SIGN_CLEARED:
        return tirx.Select(x < tirx.const(0, dtype), -x, x)
    bits, mask = _SIGN_CLEARED[dtype]
    cleared = tirx.bitwise_and(tirx.reinterpret(bits, x), tirx.const(mask, bits))
    return tirx.reinterpret(dtype, cleared)


def legalize_intrinsics(stmt: tirx.Stmt) -> tirx.Stmt:
    """Return ``stmt`` with ``fabs``/``exp2``/``exp10`` calls rewritten (see the module)."""

    def rewrite(call: Any) -> Any:
        op = call.op
        if not isinstance(op, tvm.ir.Op) or len(call.args) != 1:
            return call
        name = str(op.name)
        (x,) = call.args
        dtype = str(x.ty.dtype)
        if name == "tirx.fabs":
            return _absolute(x, dtype)
        if name == "tirx.assume":  # a hint to the optimizer: nothing to compute
            return tirx.const(0, "int32")
        if name == "tirx.exp2":
            return tirx.exp(x * tirx.const(math.log(2.0), dtype))
        if name == "tirx.exp10":
            return tirx.exp(x * tirx.const(math.log(10.0), dtype))
        return call

    return tvm_ffi.structural_map(stmt, (tvm.ir.Call, rewrite), order="post")


@dataclass(frozen=True)
class CpuLegalizeIntrinsicsPass(PrimFuncPass):
    """Rewrite intrinsics the target's code generator cannot print.

    Args:
        kinds: the target kinds the rewrite applies to (others are left alone;
            a run without a target applies it).
    """

    name: ClassVar[str] = "cpu-legalize-intrinsics"
    kinds: tuple[str, ...] = DEFAULT_KINDS

    def applies_to(self, ctx: PassContext) -> bool:
        """Return whether ``ctx``'s target kind is one of `kinds` (or no target is set)."""
        return ctx.target is None or str(ctx.target.kind.name) in self.kinds

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with the intrinsics rewritten."""
        return legalize_intrinsics(body)
