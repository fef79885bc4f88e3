"""What TVM's analyzer can prove about the indices of a kernel body, knowing the ranges
of its loops and launched thread/block indices (shared by the front end's index
rewrites: `tl_ir.negative_indices`, `tl_ir.global_access_guards`)."""

from __future__ import annotations

import contextlib
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

__all__ = ["proves", "range_analyzer"]


def range_analyzer(body: Any) -> Any:
    """An analyzer that knows every loop's and launched index's range in ``body``, and
    the value of every variable bound once (``tirx.Bind``).

    Loop and bound variables are unique objects in the IR, so binding all of them at
    once is sound for each access: an access only ever sees the loops around it."""
    analyzer = tvm.sym.Analyzer()

    def visit_for(loop: Any) -> None:
        analyzer.bind(loop.loop_var, tvm.ir.Range.from_min_extent(loop.min, loop.extent))

    def visit_attr(attr: Any) -> None:
        if attr.attr_key == "thread_extent" and isinstance(attr.node, tirx.IterVar):
            analyzer.bind(attr.node.var, tvm.ir.Range.from_min_extent(0, attr.value))

    def visit_bind(bind: Any) -> None:
        if not str(bind.var.dtype).startswith(("int", "uint")):
            return
        # a value the analyzer cannot take stays unknown
        with contextlib.suppress(tvm.error.TVMError):
            analyzer.bind(bind.var, bind.value)

    tvm_ffi.structural_walk(
        body, [(tirx.For, visit_for), (tirx.AttrStmt, visit_attr), (tirx.Bind, visit_bind)]
    )
    return analyzer


def proves(analyzer: Any, condition: Any) -> bool:
    """Whether ``analyzer`` proves ``condition``; False where TVM cannot reason about it
    (an index of bitwise or opaque arithmetic)."""
    try:
        return bool(analyzer.can_prove(condition))
    except tvm.error.TVMError:
        return False
