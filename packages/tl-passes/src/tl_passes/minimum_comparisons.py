"""`int32-minimum-comparisons`: comparisons with the smallest int32 that TVM folds wrong.

TVM's simplifier folds ``x == -2147483648`` and ``x <= -2147483648`` of an int32 ``x``
to false (its rewrite moves the constant across and the int32 minimum has no
negation), so ``T.if_then_else(A[i] == T.int32(-2147483648), 1, 0)`` was 0 on every
compiled target for ``A[i] = INT_MIN``. This pass, run before any simplification,
writes both as ``x < -2147483647`` (and ``MIN == x``, ``MIN >= x`` likewise), which
TVM keeps. Other widths and other comparisons are folded right and left alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
from tvm import tirx

from tl_passes.pass_base import PassContext, PrimFuncPass
from tl_passes.wrapping_casts import map_values

__all__ = ["Int32MinimumComparisonsPass", "rewrite_minimum_comparisons"]

_MINIMUM = -(2**31)


def _is_minimum(expr: Any) -> bool:
    if isinstance(expr, tirx.Broadcast):
        expr = expr.value
    return (
        isinstance(expr, tirx.IntImm)
        and str(expr.ty.dtype) == "int32"
        and int(expr.value) == _MINIMUM
    )


def _below_minimum_plus_one(x: Any) -> Any:
    lanes = int(tvm.DataType(str(x.ty.dtype)).lanes)
    bound = tirx.const(_MINIMUM + 1, "int32")
    return x < (bound if lanes == 1 else tirx.Broadcast(bound, lanes))


def _rewrite(node: Any) -> Any:
    if isinstance(node, tirx.EQ):
        if _is_minimum(node.b):
            return _below_minimum_plus_one(node.a)
        if _is_minimum(node.a):
            return _below_minimum_plus_one(node.b)
    elif isinstance(node, tirx.LE) and _is_minimum(node.b):
        return _below_minimum_plus_one(node.a)
    elif isinstance(node, tirx.GE) and _is_minimum(node.a):
        return _below_minimum_plus_one(node.b)
    return node


def rewrite_minimum_comparisons(stmt: tirx.Stmt) -> tirx.Stmt:
    """``stmt`` with each ``x == MIN`` / ``x <= MIN`` of int32 (in stored values, branch
    conditions and bound values) written as ``x < MIN + 1``."""
    return map_values(stmt, (tirx.EQ, tirx.LE, tirx.GE), _rewrite)


@dataclass(frozen=True)
class Int32MinimumComparisonsPass(PrimFuncPass):
    """Keep comparisons with the int32 minimum through simplification (module
    docstring)."""

    name: ClassVar[str] = "int32-minimum-comparisons"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its int32-minimum comparisons in a form TVM keeps."""
        return rewrite_minimum_comparisons(body)
