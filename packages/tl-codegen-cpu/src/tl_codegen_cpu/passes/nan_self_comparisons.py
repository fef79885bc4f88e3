"""`cpu-nan-self-comparisons`: ``x == x`` and ``x != x`` on floats keep their NaN meaning.

``x != x`` is the usual NaN test (and the only one for bfloat16, which TVM's
``isnan`` refuses), but TVM's simplifier folds a comparison of an expression with
itself to a constant, so ``x == x`` was true and ``x != x`` false for a NaN on both
CPU targets. This pass, which runs before the simplifier, writes a float ``a == a``
as ``!isnan(a)`` and ``a != a`` as ``isnan(a)``.

Two more comparisons lost their NaN meaning the same way. The simplifier rewrites a
negated float comparison into the opposite one (``!(a < b)`` into ``a >= b``), which
is false where the negation is true, when an operand is NaN: such a negation is written
``isnan(a) || isnan(b) || !(a < b)`` (whatever the simplifier then makes of the last
term is right for numbers). And TVM's LLVM code generator emits ``a != b`` as LLVM's
ordered not-equal (false for a NaN operand; C's ``!=`` is true): with
``unordered_not_equal`` (the ``llvm`` pipeline) ``a != b`` is written
``isnan(a) || isnan(b) || a != b``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.nan_rule import is_float, is_nan
from tl_passes.pass_base import PassContext, PrimFuncPass

__all__ = ["CpuNanSelfComparisonsPass", "nan_self_comparisons"]


#: The comparisons that are false for a NaN operand: their negation is true there. (A
#: negated ``!=`` is false for NaN, as the ``==`` the simplifier makes of it is.)
_ORDERED = (tirx.LT, tirx.LE, tirx.GT, tirx.GE, tirx.EQ)

#: Float types TVM's ``isnan`` takes here (float8 comparisons are legalized before).
_NAN_TESTED = ("float16", "bfloat16", "float32", "float64")


def _nan_tested(expr: Any) -> bool:
    return str(expr.ty.dtype).startswith(_NAN_TESTED)


def _either_nan(a: Any, b: Any) -> Any:
    return tirx.Or(is_nan(a), is_nan(b))


def nan_self_comparisons(stmt: tirx.Stmt, *, unordered_not_equal: bool = False) -> tirx.Stmt:
    """``stmt`` with each float comparison of an expression with itself a NaN test, each
    negated float comparison guarded by NaN tests, and (``unordered_not_equal``) each
    float ``!=`` too (module docstring)."""

    def rewrite(node: Any) -> Any:
        if not is_float(str(node.a.ty.dtype)):
            return node
        if not tvm_ffi.structural_equal(node.a, node.b):
            if unordered_not_equal and isinstance(node, tirx.NE) and _nan_tested(node.a):
                return tirx.Or(_either_nan(node.a, node.b), node)
            return node
        test = is_nan(node.a)
        return test if isinstance(node, tirx.NE) else tirx.Not(test)

    def negation(node: Any) -> Any:
        inner = node.a
        if not isinstance(inner, _ORDERED) or not is_float(str(inner.a.ty.dtype)):
            return node
        if not _nan_tested(inner.a):
            return node
        return tirx.Or(_either_nan(inner.a, inner.b), node)

    # Negations first, on the comparisons as written; then the comparisons themselves.
    stmt = tvm_ffi.structural_map(stmt, (tirx.Not, negation), order="post")
    return tvm_ffi.structural_map(stmt, ((tirx.EQ, tirx.NE), rewrite), order="post")


@dataclass(frozen=True)
class CpuNanSelfComparisonsPass(PrimFuncPass):
    """Keep ``x == x`` / ``x != x`` NaN tests from being folded (module docstring)."""

    name: ClassVar[str] = "cpu-nan-self-comparisons"
    unordered_not_equal: bool = False

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with float self-comparisons written as NaN tests (and the
        other comparisons the module docstring names guarded)."""
        return nan_self_comparisons(body, unordered_not_equal=self.unordered_not_equal)
