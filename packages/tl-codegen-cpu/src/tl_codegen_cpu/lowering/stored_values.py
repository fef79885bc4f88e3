"""Rewrites applied to the values a kernel stores, never to its index arithmetic.

Some CPU rewrites (a defined result for integer division by 0, wrapping signed
overflow) change how an expression computes; in a buffer's indices or a loop's
bounds they would hide the affine forms TVM's simplifier and vectorizer rely on
(a contiguous load would become a gather). `map_stored_values` applies such a
rewrite to every stored value, skipping the indices of the loads inside it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_passes.wrapping_casts import rewrite_outside_indices

__all__ = ["index_buffers", "map_stored_values", "rewrite_outside_indices"]


def index_buffers(stmt: tirx.Stmt) -> list[Any]:
    """The buffers read inside an index or a loop bound in ``stmt``: what is stored
    into them (``k = bx * 64 + i`` kept in a local) is index arithmetic."""
    found: list[Any] = []

    def note_loads(expr: Any) -> None:
        def visit(load: Any) -> None:
            if not any(b.same_as(load.source) for b in found):
                found.append(load.source)

        tvm_ffi.structural_walk(expr, [(tvm.ir.TensorLoad, visit)])

    def visit_access(node: Any) -> None:
        for index in node.indices:
            note_loads(index)

    def visit_loop(loop: Any) -> None:
        note_loads(loop.min)
        note_loads(loop.extent)

    tvm_ffi.structural_walk(
        stmt,
        [
            (tvm.ir.TensorLoad, visit_access),
            (tirx.BufferStore, visit_access),
            (tirx.For, visit_loop),
        ],
    )
    return found


def map_stored_values(
    stmt: tirx.Stmt,
    node_types: tuple[type, ...],
    rewrite: Callable[[Any], Any],
    skip_indices: bool = False,
) -> tirx.Stmt:
    """``stmt`` with ``rewrite`` applied, bottom-up, to every node of ``node_types`` in
    the values its ``BufferStore``s store, except inside the indices of loads.

    Args:
        stmt: the statement to rewrite.
        node_types: the expression classes ``rewrite`` is called on.
        rewrite: maps one such node to its replacement (or returns it unchanged).
        skip_indices: leave alone the stores into `index_buffers` too.
    """
    skipped = index_buffers(stmt) if skip_indices else []

    def store(node: Any) -> Any:
        if any(b.same_as(node.buffer) for b in skipped):
            return node
        value = rewrite_outside_indices(node.value, node_types, rewrite)
        if value.same_as(node.value):
            return node
        return tirx.BufferStore(node.buffer, value, list(node.indices))

    return tvm_ffi.structural_map(stmt, (tirx.BufferStore, store), order="post")
