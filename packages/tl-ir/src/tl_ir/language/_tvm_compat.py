"""Names TileLang programs reach through TVM that this TVM spells differently.

TileLang's TVM fork has ``tvm.tirx.PrimExpr`` and a ``dtype`` attribute on every
expression; this TVM types expressions through ``expr.ty``. Importing the language
adds the two TileLang spellings when TVM lacks them (and never replaces a name TVM
has): ``isinstance(x, tvm.tirx.PrimExpr)`` is true for a primitive-typed expression
and ``expr.dtype`` is the dtype string of such an expression.
"""

from __future__ import annotations

from typing import Any

import tvm
from tvm import tirx

__all__ = ["PrimExpr", "install"]


class _PrimExprMeta(type):
    def __instancecheck__(cls, instance: Any) -> bool:
        return bool(tvm.ir.is_prim_expr(instance))


class PrimExpr(metaclass=_PrimExprMeta):
    """``isinstance(x, PrimExpr)``: whether ``x`` is an expression of a primitive type
    (an int, float or bool scalar or vector expression)."""


def _expr_dtype(expr: Any) -> str | None:
    """The dtype string of a primitive-typed expression (None for other expressions)."""
    dtype = getattr(getattr(expr, "ty", None), "dtype", None)
    return None if dtype is None else str(dtype)


def install() -> None:
    """Add ``tvm.tirx.PrimExpr`` and ``expr.dtype`` where TVM lacks them.

    TVM gives ``Var`` a ``dtype`` property that only buffers answer; scalar Vars then
    answer with their primitive dtype too, buffers keep TVM's answer.
    """
    if not hasattr(tirx, "PrimExpr"):
        tirx.PrimExpr = PrimExpr
    if not hasattr(tvm.ir.Expr, "dtype"):
        tvm.ir.Expr.dtype = property(_expr_dtype)
    buffer_dtype = tvm.ir.Var.__dict__.get("dtype")
    if isinstance(buffer_dtype, property) and buffer_dtype.fget is not None:
        try:
            tirx.Var("probe", "int32").dtype  # noqa: B018 - probing TVM's property
        except AttributeError:
            buffer_getter = buffer_dtype.fget

            def var_dtype(var: Any) -> Any:
                if isinstance(getattr(var, "ty", None), tirx.BufferType):
                    return buffer_getter(var)
                return _expr_dtype(var)

            tvm.ir.Var.dtype = property(var_dtype)
