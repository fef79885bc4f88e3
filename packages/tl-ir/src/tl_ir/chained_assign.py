"""Chained assignment ``a = b = c`` in a kernel body, as in Python and TileLang.

TVM's kernel parser refuses an assignment with more than one target. In a kernel
parsed by `tl_ir.prim_func`, the value is evaluated once and assigned to each target
from left to right (``A[i] = B[i] = 1`` stores 1 into both); every other parse keeps
TVM's behaviour.
"""

from __future__ import annotations

from typing import Any

from tvm.script.parser.core import dispatch, doc

from tl_ir.frontend import current_state

__all__ = ["install"]

_TOKEN = "tirx"


def install() -> None:
    """Wrap the kernel parser's ``Assign`` handler (once per process)."""
    original = dispatch.get(token=_TOKEN, type_name="Assign")
    if original is None or getattr(original, "_tl_chained", False):
        return

    def visit_assign(self: Any, node: Any) -> Any:
        if len(node.targets) == 1 or current_state() is None:
            return original(self, node)
        value = self.eval_expr(node.value)
        # A name no program spells: the value is computed once and each target reads it.
        name = f"__tl_chained_value_{id(node)}"
        self.var_table.add(name, value, allow_shadowing=True)
        v = node.value
        for target in node.targets:
            load = doc.Name(
                name, doc.Load(), v.lineno, v.col_offset, v.end_lineno, v.end_col_offset
            )
            single = doc.Assign(
                [target], load, node.lineno, node.col_offset, node.end_lineno, node.end_col_offset
            )
            original(self, single)
        return None

    visit_assign._tl_chained = True  # type: ignore[attr-defined]
    dispatch.register(token=_TOKEN, type_name="Assign")(visit_assign)
