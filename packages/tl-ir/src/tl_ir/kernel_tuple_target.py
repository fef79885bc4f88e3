"""``with T.Kernel(n) as (bx,):`` unpacks the one block index, as in TileLang.

`T.Kernel` gives one Var for a one-dim grid and a tuple for more; TVM's kernel parser
assigns a ``with`` target with Python's unpacking, so a one-element tuple target
(``as (bx,)``, which TileLang programs write) iterated the Var and failed with "Type
PrimType does not support subscript". In a kernel parsed by `tl_ir.prim_func`, a
``with`` whose ``T.Kernel(...)`` item has a one-element tuple target asks the kernel
frame for a tuple (`ParseState.kernel_tuple_target`); every other parse keeps TVM's
behaviour.
"""

from __future__ import annotations

from typing import Any

from tvm.script.parser.core import dispatch, doc

from tl_ir.frontend import current_state

__all__ = ["install"]

_TOKEN = "tirx"


def _is_kernel_call(expr: Any) -> bool:
    if not isinstance(expr, doc.Call):
        return False
    func = expr.func
    name = func.attr if isinstance(func, doc.Attribute) else getattr(func, "id", None)
    return name == "Kernel"


def _one_element_tuple(target: Any) -> bool:
    return isinstance(target, doc.Tuple | doc.List) and len(target.elts) == 1


def install() -> None:
    """Wrap the kernel parser's ``With`` handler (once per process)."""
    original = dispatch.get(token=_TOKEN, type_name="With")
    if original is None or getattr(original, "_tl_kernel_tuple", False):
        return

    def visit_with(self: Any, node: Any) -> Any:
        state = current_state()
        wants_tuple = any(
            _is_kernel_call(item.context_expr) and _one_element_tuple(item.optional_vars)
            for item in node.items
        )
        if state is None or not wants_tuple:
            return original(self, node)
        state.kernel_tuple_target = True
        try:
            return original(self, node)
        finally:
            state.kernel_tuple_target = False

    visit_with._tl_kernel_tuple = True  # type: ignore[attr-defined]
    dispatch.register(token=_TOKEN, type_name="With")(visit_with)
