"""An ``if`` on a plain Python value in a kernel body, resolved while parsing.

TVM's kernel parser resolves ``if`` statically only when the condition is a Python
``bool``; any other Python value (``None`` from a helper such as TileLang's
``is_hopper = check_hopper()``, an ``int``, a list) is refused with "If condition must
be a boolean expression". TileLang treats such a condition as a compile-time
constant: its truth value (``bool(value)``) picks the branch. In a kernel parsed by
`tl_ir.prim_func` (classic or eager), this module does the same; a kernel expression
(``PrimExpr``) still becomes a run-time ``if``, and a tensor as the condition is
refused with a `KernelTypeError` saying to compare an element instead.
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
    if isinstance(value, bool) or tvm.ir.is_prim_expr(value):
        return value
    if isinstance(value, tvm.tirx.expr.ExprOp):
        return value
    if _ops.is_buffer(value) or isinstance(value, tvm.ir.TensorRegion):
        raise KernelTypeError(
            f"if: a tensor ({value!r}) is not a condition; compare one of its elements "
            "(if A[i] > 0:)"
        )
    return bool(value)


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
