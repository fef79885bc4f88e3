"""Threads that run an atomic returning its previous value stay scalar loops.

``pos = T.atomic_add(count[0], 1, return_prev=True)`` gives each thread the value
``count[0]`` held just before its own update. Lowered for a block-local ``count``
it is ``prev = count[0]; count[0] = prev + 1``: correct when the threads run one
after another, wrong as SIMD lanes (every lane would read the same ``count[0]``).
`cpu-lower-launch` marks each such lowered atomic (`mark_fetching_atomic`), and a
thread nest holding one keeps its scalar thread loops, its
``tl.cpu_thread_path`` saying why (`FETCHING_ATOMIC_PATH`); the markers are
removed before the nest leaves the pass (`strip_fetching_markers`).
"""

from __future__ import annotations

from typing import Any

import tvm_ffi
from tvm import tirx

from tl_ir.ops import AtomicOp

__all__ = [
    "FETCHING_ATOMIC_KEY",
    "FETCHING_ATOMIC_PATH",
    "holds_fetching_atomic",
    "mark_fetching_atomic",
    "strip_fetching_markers",
]

#: Attribute key around a lowered atomic that returns its previous value.
FETCHING_ATOMIC_KEY = "tl.cpu_fetching_atomic"

#: The ``tl.cpu_thread_path`` of a thread nest kept scalar for such an atomic.
FETCHING_ATOMIC_PATH = (
    "scalar: an atomic returning its previous value (return_prev) runs thread by thread"
)


def mark_fetching_atomic(op: Any, lowered: tirx.Stmt) -> tirx.Stmt:
    """``lowered`` (the statement of tile op ``op``) under a `FETCHING_ATOMIC_KEY`
    attribute when ``op`` is an atomic returning its previous value; else as it is."""
    if isinstance(op, AtomicOp) and op.prev is not None:
        return tirx.AttrStmt(tirx.const(0, "int32"), FETCHING_ATOMIC_KEY, tirx.const(1), lowered)
    return lowered


def _is_marker(stmt: Any) -> bool:
    return isinstance(stmt, tirx.AttrStmt) and str(stmt.attr_key) == FETCHING_ATOMIC_KEY


def holds_fetching_atomic(stmt: Any) -> bool:
    """Whether ``stmt`` holds a statement marked by `mark_fetching_atomic`."""
    found: list[bool] = []

    def visit(node: Any) -> None:
        if _is_marker(node):
            found.append(True)

    tvm_ffi.structural_walk(stmt, (tirx.AttrStmt, visit))
    return bool(found)


def strip_fetching_markers(stmt: Any) -> Any:
    """``stmt`` without the `mark_fetching_atomic` attributes (their bodies kept)."""

    def strip(node: Any) -> Any:
        return node.body if _is_marker(node) else node

    return tvm_ffi.structural_map(stmt, (tirx.AttrStmt, strip), order="post")
