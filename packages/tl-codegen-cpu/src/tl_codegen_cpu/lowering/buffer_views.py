"""Which buffers share memory through views (``T.reshape``, ``T.view``,
``T.Tensor(shape, dtype, B.data)``): a view is a ``DeclBuffer`` over another
buffer's data, so a pass that reasons about one buffer's reads and writes must
count those made through any of its views (and, for a view, through the buffer
it views and that buffer's other views) as its own.
"""

from __future__ import annotations

from typing import Any

import tvm_ffi
from tvm import tirx

from tl_ir.ops import viewed_buffer


def view_pairs(stmt: Any) -> list[tuple[Any, Any]]:
    """``(view, viewed buffer)`` for every ``DeclBuffer`` in ``stmt`` over another
    buffer's memory, in program order."""
    pairs: list[tuple[Any, Any]] = []

    def add(decl: Any) -> None:
        base = viewed_buffer(decl)
        if base is not None:
            pairs.append((decl.buffer, base))

    tvm_ffi.structural_walk(stmt, (tirx.DeclBuffer, add), order="pre")
    return pairs


def memory_aliases(buffer: Any, pairs: list[tuple[Any, Any]]) -> list[Any]:
    """``buffer`` and every buffer sharing its memory through the views ``pairs``
    (the buffer it views, views of it, views of views, sibling views), ``buffer`` first."""
    group = [buffer]
    grown = True
    while grown:
        grown = False
        for view, base in pairs:
            has_view = any(view.same_as(b) for b in group)
            has_base = any(base.same_as(b) for b in group)
            if has_view != has_base:
                group.append(base if has_view else view)
                grown = True
    return group


def views_of(buffer: Any, pairs: list[tuple[Any, Any]]) -> list[Any]:
    """The views of ``buffer`` in ``pairs``, following views of views."""
    group = [buffer]
    grown = True
    while grown:
        grown = False
        for view, base in pairs:
            if any(base.same_as(b) for b in group) and not any(view.same_as(b) for b in group):
                group.append(view)
                grown = True
    return group[1:]
