"""`cpu-wrapping-casts`: integer conversions that may wrap keep their wrap through TVM's
simplifier.

TVM bounds a conversion by the value's range intersected with the target type's, so a
conversion that wraps was taken for its value: ``T.cast(u, "int32") < 0`` of a
``uint32`` folded to false, a ``T.max`` with 0 vanished, ``%`` and ``//`` by a positive
constant became truncating, and the zero-divisor guard of a remainder was dropped (a
SIGFPE on llvm). This pass, the first of the CPU pipelines (before any simplification),
writes each conversion of a stored value, a branch condition or a bound scalar whose
value may not fit as `tl_passes.wrapping_casts.wrapping_cast` (the low bits,
sign-extended by arithmetic whose bounds TVM follows); the C compilers fold it back to
the plain conversion. Indices and loop bounds are left alone, as in the other
arithmetic rules; `cpu-wrap-integer-overflow` writes its own conversions this way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.stored_values import rewrite_outside_indices
from tl_passes.pass_base import PassContext, PrimFuncPass
from tl_passes.wrapping_casts import may_wrap, wrapping_cast

__all__ = ["CpuWrappingCastsPass", "wrap_integer_casts"]


def wrap_integer_casts(stmt: tirx.Stmt) -> tirx.Stmt:
    """``stmt`` with each integer conversion that may wrap, in a stored value, a branch
    condition or a bound value, written as `wrapping_cast`."""
    analyzer = tvm.sym.Analyzer()

    def cast(node: Any) -> Any:
        if not may_wrap(node, analyzer):
            return node
        return wrapping_cast(str(node.ty.dtype), node.value)

    def in_value(value: Any) -> Any:
        return rewrite_outside_indices(value, (tirx.Cast,), cast)

    def store(node: Any) -> Any:
        value = in_value(node.value)
        if value.same_as(node.value):
            return node
        return tirx.BufferStore(node.buffer, value, list(node.indices))

    def branch(node: Any) -> Any:
        condition = in_value(node.condition)
        if condition.same_as(node.condition):
            return node
        return tirx.IfThenElse(condition, node.then_case, node.else_case)

    def bind(node: Any) -> Any:
        value = in_value(node.value)
        if value.same_as(node.value):
            return node
        return tirx.Bind(node.var, value)

    return tvm_ffi.structural_map(
        stmt,
        [(tirx.BufferStore, store), (tirx.IfThenElse, branch), (tirx.Bind, bind)],
        order="post",
    )


@dataclass(frozen=True)
class CpuWrappingCastsPass(PrimFuncPass):
    """Keep wrapping integer conversions wrapping through simplification (module
    docstring)."""

    name: ClassVar[str] = "cpu-wrapping-casts"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its integer conversions that may wrap made explicit."""
        return wrap_integer_casts(body)
