"""A kernel written as ``T.thread_binding`` loops instead of ``T.Kernel``.

TileLang accepts a body that binds the launch indices with loops
(``for bx in T.thread_binding(1, thread="blockIdx.x"): for tx in
T.thread_binding(128, thread="threadIdx.x"): ...``, its test_let_vectorize_load). A
perfect nest of such loops on ``blockIdx``/``threadIdx`` tags at the top of a function
(outside any ``T.Kernel``) is that launch: `launch_thread_binding_nests` rewrites it to
the ``thread_extent`` attributes ``T.Kernel`` builds (grid dims first, then threads; one
block when the nest binds no ``blockIdx``), so every target lowers it as a kernel.
Loops bound inside a ``T.Kernel`` are left to the passes that bind them there.
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

__all__ = ["launch_thread_binding_nests"]

_BLOCK_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
_THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")


def _binding_tag(stmt: Any) -> str | None:
    if not isinstance(stmt, tirx.For) or stmt.kind != tirx.ForKind.THREAD_BINDING:
        return None
    if stmt.thread_binding is None:
        return None
    tag = str(stmt.thread_binding.thread_tag)
    return tag if tag in _BLOCK_TAGS + _THREAD_TAGS else None


def _launch(tag: str, var: Any, extent: Any, body: Any) -> Any:
    iter_var = tirx.IterVar(tvm.ir.Range(0, extent), var, tirx.IterVar.ThreadIndex, tag)
    return tirx.AttrStmt(iter_var, "thread_extent", extent, body)


def _as_launch(nest: Any) -> Any:
    """The launch for the perfect nest of launch-tag loops starting at ``nest``; ``nest``
    itself when it is not one (a tag bound twice, a loop not starting at 0)."""
    loops: list[Any] = []
    stmt = nest
    while _binding_tag(stmt) is not None:
        loops.append(stmt)
        stmt = stmt.body
    tags = [_binding_tag(loop) for loop in loops]
    if len(set(tags)) != len(tags):
        return nest
    if any(not (isinstance(loop.min, tirx.IntImm) and int(loop.min) == 0) for loop in loops):
        return nest
    by_tag = dict(zip(tags, loops, strict=True))
    body = stmt
    ordered = [t for t in _BLOCK_TAGS + _THREAD_TAGS if t in by_tag]
    for tag in reversed(ordered):
        loop = by_tag[tag]
        body = _launch(tag, loop.loop_var, loop.extent, body)
    if not any(tag in by_tag for tag in _BLOCK_TAGS):
        body = _launch("blockIdx.x", tirx.Var("bx", "int32"), tirx.IntImm("int32", 1), body)
    return body


def _launches_anything(body: Any) -> bool:
    found: list[bool] = []

    def visit(attr: Any) -> None:
        if attr.attr_key == "thread_extent":
            found.append(True)

    tvm_ffi.structural_walk(body, (tirx.AttrStmt, visit), order="pre")
    return bool(found)


def launch_thread_binding_nests(body: Any) -> Any:
    """``body`` with each top-level nest of ``T.thread_binding`` loops on launch tags (the
    function body, or a statement of its top sequence) made a launch (module docstring);
    unchanged when it launches with ``T.Kernel`` or has no such nest."""
    if _binding_tag(body) is not None:
        return body if _launches_anything(body) else _as_launch(body)
    if isinstance(body, tirx.SeqStmt) and any(_binding_tag(s) is not None for s in body.seq):
        if _launches_anything(body):
            return body
        return tirx.SeqStmt([_as_launch(s) if _binding_tag(s) else s for s in body.seq])
    return body
