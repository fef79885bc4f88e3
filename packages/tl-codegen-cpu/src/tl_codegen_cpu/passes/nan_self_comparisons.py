"""`cpu-nan-self-comparisons`: ``x == x`` and ``x != x`` on floats keep their NaN meaning.

``x != x`` is the usual NaN test (and the only one for bfloat16, which TVM's
``isnan`` refuses), but TVM's simplifier folds a comparison of an expression with
itself to a constant, so ``x == x`` was true and ``x != x`` false for a NaN on both
CPU targets. This pass, which runs before the simplifier, writes a float ``a == a``
as ``!isnan(a)`` and ``a != a`` as ``isnan(a)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.nan_rule import is_float, is_nan
from tl_passes.pass_base import PassContext, PrimFuncPass

__all__ = ["CpuNanSelfComparisonsPass", "nan_self_comparisons"]


def nan_self_comparisons(stmt: tirx.Stmt) -> tirx.Stmt:
    """``stmt`` with each float comparison of an expression with itself a NaN test."""

    def rewrite(node: Any) -> Any:
        if not is_float(str(node.a.ty.dtype)):
            return node
        if not tvm_ffi.structural_equal(node.a, node.b):
            return node
        test = is_nan(node.a)
        return test if isinstance(node, tirx.NE) else tirx.Not(test)

    return tvm_ffi.structural_map(stmt, ((tirx.EQ, tirx.NE), rewrite), order="post")


@dataclass(frozen=True)
class CpuNanSelfComparisonsPass(PrimFuncPass):
    """Keep ``x == x`` / ``x != x`` NaN tests from being folded (module docstring)."""

    name: ClassVar[str] = "cpu-nan-self-comparisons"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with float self-comparisons written as NaN tests."""
        return nan_self_comparisons(body)
