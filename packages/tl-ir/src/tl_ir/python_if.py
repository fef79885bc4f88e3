"""An ``if`` on a plain Python value in a kernel body, resolved while parsing.

TVM's kernel parser resolves ``if`` statically only when the condition is a Python
``bool``; any other Python value (``None`` from a helper such as TileLang's
``is_hopper = check_hopper()``, an ``int``, a list) is refused with "If condition must
be a boolean expression". TileLang treats such a condition as a compile-time
constant: its truth value (``bool(value)``) picks the branch. In a kernel parsed by
`tl_ir.prim_func` (classic or eager), this module does the same; a kernel expression
(``PrimExpr``) still becomes a run-time ``if`` (a number is true when it is not zero,
also under ``not``/``and``/``or`` and as the test of ``a if c else b``), and a tensor as the condition is refused with a
`KernelTypeError` saying to compare an element instead.
"""

from __future__ import annotations

from typing import Any

import tvm

from tl_ir import ops as _ops
from tl_ir.errors import KernelTypeError
from tl_ir.frontend import current_state

__all__ = ["install", "static_condition"]

_TOKEN = "tirx"


def static_condition(value: Any) -> Any:
    """The condition the kernel parser should see for ``value``: kernel expressions and
    ``bool`` unchanged, any other Python value its truth value.

    Raises:
        KernelTypeError: ``value`` is a tensor (its truth has no meaning).
    """
    if isinstance(value, bool):
        return value
    if tvm.ir.is_prim_expr(value) or isinstance(value, tvm.tirx.expr.ExprOp):
        return _truth(value)
    if _ops.is_buffer(value) or isinstance(value, tvm.ir.TensorRegion):
        raise KernelTypeError(
            f"if: a tensor ({value!r}) is not a condition; compare one of its elements "
            "(if A[i] > 0:)"
        )
    return bool(value)


def _truth(value: Any) -> Any:
    """A kernel expression as a condition: a number is true when it is not zero (as
    in C and CUDA; TVM stopped with an internal error on ``if n:`` for an int32 ``n``)."""
    dtype = str(getattr(getattr(value, "ty", None), "dtype", "bool"))
    if dtype == "bool" or "x" in dtype:  # a vector condition is left to TVM's message
        return value
    return value != tvm.tirx.const(0, dtype)


def install() -> None:
    """Wrap the kernel parser's ``If`` handler (once per process)."""
    from tvm.script.parser.core import dispatch, doc

    original = dispatch.get(token=_TOKEN, type_name="If")
    if original is None or getattr(original, "_tl_python_if", False):
        return

    def visit_if(self: Any, node: Any) -> Any:
        if current_state() is None:
            return original(self, node)
        condition = static_condition(self.eval_expr(node.test))
        # A name no program spells holds the evaluated condition, so the parser's own
        # handler neither evaluates it twice nor sees the Python value.
        name = f"__tl_if_condition_{id(node)}"
        self.var_table.add(name, condition, allow_shadowing=True)
        t = node.test
        test = doc.Name(name, doc.Load(), t.lineno, t.col_offset, t.end_lineno, t.end_col_offset)
        single = doc.If(
            test,
            node.body,
            node.orelse,
            node.lineno,
            node.col_offset,
            node.end_lineno,
            node.end_col_offset,
        )
        return original(self, single)

    visit_if._tl_python_if = True  # type: ignore[attr-defined]
    dispatch.register(token=_TOKEN, type_name="If")(visit_if)
    _install_logical_operators(dispatch, doc)
    _install_if_expressions()


def _install_if_expressions() -> None:
    """``a if c else b`` takes ``c`` as ``if`` does: a number is true when it is not
    zero (TVM refused it, "Expected Python bool or TIR bool"), a Python value by its
    truth, a tensor is refused."""
    from tvm.script.parser.core.evaluator import ExprEvaluator

    original = ExprEvaluator._eval_if_exp
    if getattr(original, "_tl_python_if", False):
        return

    def eval_if_exp(self: Any, node: Any) -> Any:
        if current_state() is None:
            return original(self, node)
        test = static_condition(self._eval_expr(self._visit(node.test)))
        if isinstance(test, bool):
            return self._eval_expr(self._visit(node.body if test else node.orelse))
        body = self._eval_expr(self._visit(node.body))
        orelse = self._eval_expr(self._visit(node.orelse))
        return tvm.tirx.op.if_then_else(test, body, orelse)

    eval_if_exp._tl_python_if = True  # type: ignore[attr-defined]
    ExprEvaluator._eval_if_exp = eval_if_exp


def _install_logical_operators(dispatch: Any, doc: Any) -> None:
    """Make ``not``, ``and`` and ``or`` of kernel numbers test them against zero while
    a kernel is parsed (TVM's ``Not``/``And``/``Or`` stopped with an internal error on
    an int32 operand)."""
    from tvm import tirx

    for operator, indices in ((doc.Not, (0,)), (doc.And, (0, 1)), (doc.Or, (0, 1))):
        for index in indices:
            previous = dispatch.get_op(tirx.Expr, operator, index, default=None)
            if previous is None or getattr(previous, "_tl_truth", False):
                continue

            def evaluate(*operands: Any, _previous: Any = previous) -> Any:
                if current_state() is not None:
                    operands = tuple(_truth(o) if tvm.ir.is_prim_expr(o) else o for o in operands)
                return _previous(*operands)

            evaluate._tl_truth = True  # type: ignore[attr-defined]
            dispatch.register_op(tirx.Expr, operator, index)(evaluate)
