"""A negated float constant keeps its sign: ``-(0.0)`` is ``-0.0``, as in C and IEEE 754.

TVM writes ``-x`` as ``x * -1.0`` and its constant folder turns ``0.0 * -1.0`` (and
``-FloatImm(0.0)``) into ``+0.0``: a kernel's ``-T.cast(T.bfloat16(0.0), "float16")``
or ``-T.float32(0)`` stored +0.0 on every target where C, CUDA and the interpreter's
IEEE rules give -0.0 (a later ``1 / x`` then had the wrong infinity). `negated`
folds a negation whose operand is a constant expression itself, flipping the sign of
the folded value; an operand read at run time keeps TVM's ``x * -1.0``, which C and
LLVM evaluate exactly. `install` makes the kernel parser's unary ``-`` use it.
"""

from __future__ import annotations

from typing import Any

import tvm
from tvm import tirx

from tl_ir.frontend import current_state

__all__ = ["constant_negation", "install", "negated"]


def _is_float(expr: Any) -> bool:
    dtype = getattr(getattr(expr, "ty", None), "dtype", None)
    return dtype is not None and str(dtype).startswith(("float", "bfloat"))


def _is_constant_tree(expr: Any) -> bool:
    """Whether ``expr`` reads nothing at run time (only literals, casts, arithmetic
    and calls of them), so that TVM's folder may turn it into a literal."""
    if isinstance(expr, tirx.FloatImm | tirx.IntImm):
        return True
    if isinstance(expr, tirx.Cast | tirx.Broadcast):
        return _is_constant_tree(expr.value)
    if isinstance(expr, tvm.ir.Call) and isinstance(expr.op, tvm.ir.Op):
        return all(_is_constant_tree(arg) for arg in expr.args)
    operands = [getattr(expr, name, None) for name in ("a", "b")]
    if all(operand is not None for operand in operands):
        return all(_is_constant_tree(operand) for operand in operands)
    return False


def constant_negation(value: Any) -> Any | None:
    """``-value`` as a literal with its exact sign when ``value`` is a float constant
    expression TVM folds to a literal (a scalar or a broadcast one); None otherwise."""
    if not _is_float(value) or not _is_constant_tree(value):
        return None
    folded = value if isinstance(value, tirx.FloatImm) else tvm.sym.Analyzer().simplify(value)
    lanes = None
    if isinstance(folded, tirx.Broadcast):
        lanes, folded = folded.lanes, folded.value
    if not isinstance(folded, tirx.FloatImm):
        return None
    literal = tirx.FloatImm(str(folded.ty.dtype), -folded.value)
    return literal if lanes is None else tirx.Broadcast(literal, lanes)


def negated(value: Any) -> Any:
    """``-value`` with IEEE semantics for a float constant operand (see the module);
    TVM's ``-`` for every other operand."""
    literal = constant_negation(value)
    return -value if literal is None else literal


def install() -> None:
    """Make the kernel parser's unary ``-`` of a TVM expression use `negated` while a
    kernel is parsed (once per process; other parses keep TVM's ``-``)."""
    from tvm.script.parser.core import dispatch, doc

    previous = dispatch.get_op(tirx.Expr, doc.USub, 0, default=None)
    if getattr(previous, "_tl_float_negation", False):
        return

    def negate(value: Any) -> Any:
        if current_state() is not None:
            return negated(value)
        return previous(value) if previous is not None else -value

    negate._tl_float_negation = True  # type: ignore[attr-defined]
    dispatch.register_op(tirx.Expr, doc.USub, 0)(negate)
