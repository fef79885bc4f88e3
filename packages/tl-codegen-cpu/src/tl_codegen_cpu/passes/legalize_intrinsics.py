"""`cpu-legalize-intrinsics`: math intrinsics TVM's C code generator cannot print, rewritten.

TVM 0.27's C codegen has no rule for ``fabs`` (``T.abs`` on floats, used by
``reduce_abssum``/``reduce_absmax``), ``exp2`` or ``exp10`` (it fails with
"Unresolved call"). This pass rewrites them with what every target prints:
``abs(x)`` -> ``x < 0 ? -x : x``, ``exp2(x)`` -> ``exp(x * ln 2)``,
``exp10(x)`` -> ``exp(x * ln 10)``. By default it runs only for target
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
            return tirx.Select(x < tirx.const(0, dtype), -x, x)
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
