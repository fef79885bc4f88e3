"""What TVM's analyzer can prove about the indices of a kernel body, knowing the ranges
of its loops and launched thread/block indices (shared by the front end's index
rewrites, `tl_ir.negative_indices` and `tl_ir.global_access_guards`, and by backend
passes that ask whether an operation can overflow)."""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

__all__ = ["TVM_ERRORS", "proves", "range_analyzer"]

#: What TVM raises when its analyzer cannot take an expression (an internal check:
#: ``RuntimeError``; a bad argument: ``ValueError``/``TypeError``).
TVM_ERRORS: tuple[type[BaseException], ...] = (RuntimeError, ValueError, TypeError)


def range_analyzer(body: Any) -> Any:
    """An analyzer that knows the range of every loop and launched index in ``body``,
    and the value of every integer variable bound by a ``tirx.Bind``.

    Only a variable defined at exactly one place is bound: each access then only ever
    sees the one definition, so binding all of them at once is sound. A variable a pass
    defined twice (a loop body duplicated with its loop variable) stays unknown."""
    sites: dict[int, list[tuple[Any, Any]]] = {}

    def record(var: Any, value: Any) -> None:
        sites.setdefault(int(var.__chandle__()), []).append((var, value))

    def visit_for(loop: Any) -> None:
        record(loop.loop_var, tvm.ir.Range.from_min_extent(loop.min, loop.extent))

    def visit_attr(attr: Any) -> None:
        if attr.attr_key == "thread_extent" and isinstance(attr.node, tirx.IterVar):
            record(attr.node.var, tvm.ir.Range.from_min_extent(0, attr.value))

    def visit_bind(bind: Any) -> None:
        dtype = getattr(getattr(bind.var, "ty", None), "dtype", None)
        if str(dtype).startswith(("int", "uint")):
            record(bind.var, bind.value)

    tvm_ffi.structural_walk(
        body, [(tirx.For, visit_for), (tirx.AttrStmt, visit_attr), (tirx.Bind, visit_bind)]
    )
    analyzer = tvm.sym.Analyzer()
    for definitions in sites.values():
        if len(definitions) != 1:
            continue
        var, value = definitions[0]
        try:
            analyzer.bind(var, value)
        except TVM_ERRORS:  # a value the analyzer cannot take stays unknown
            continue
    return analyzer


def proves(analyzer: Any, condition: Any) -> bool:
    """Whether ``analyzer`` proves ``condition``; False where TVM cannot reason about it
    (an index of bitwise or opaque arithmetic)."""
    try:
        return bool(analyzer.can_prove(condition))
    except TVM_ERRORS:
        return False
