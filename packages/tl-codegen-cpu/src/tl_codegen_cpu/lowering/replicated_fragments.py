"""Fragments that only per-thread code touches hold one copy per thread.

A fragment is distributed over a block's threads by its layout; one that no tile op
(but ``T.fill`` / ``T.clear``, which give every copy the same value) and no
``T.Parallel`` loop touches, only statements every thread runs on its own (``acc[0] =
0`` or ``T.clear(acc)``; ``acc[0] = acc[0] + A[k]`` in a serial loop; ``if tx == 0:
B[0] = acc[0]``), gets TileLang's replicated layout: each thread updates its own copy. On
the CPU a fragment is one array per block, so in a block that runs its threads as
loops every thread added into the one copy: the sum of four ones, read by thread 0,
was 512 with 128 threads (TileLang's own reducer tests, an online softmax kept in
``(1,)`` fragments, hit it). Such a fragment is given ``local`` scope before the
threads are lowered, so `per_thread_locals` gives it one copy per thread wherever a
value crosses a region, as for ``T.alloc_local``.
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir import scopes
from tl_ir.launch import LOOP_KIND_KEY
from tl_ir.ops import FillOp, describe, is_tile_op, viewed_buffer
from tl_passes.buffer_rewrite import allocated_buffers, rescope_buffers

__all__ = ["privatize_per_thread_fragments"]


def _buffers_in(node: Any, found: list[Any]) -> None:
    def var(v: Any) -> None:
        found.append(v)

    def load(n: Any) -> None:
        found.append(n.source)

    def store(n: Any) -> None:
        found.append(n.buffer)

    tvm_ffi.structural_walk(
        node,
        [(tvm.ir.Var, var), (tvm.ir.TensorLoad, load), (tirx.BufferStore, store)],
        order="pre",
    )


def _cooperative_buffers(body: tirx.Stmt) -> list[Any]:
    """The buffers a tile op (any call), a ``T.Parallel`` loop or a view mentions in
    ``body``; a fill's destination is not one (it writes every copy alike)."""
    found: list[Any] = []

    def loop(node: Any) -> None:
        kind = node.annotations.get(LOOP_KIND_KEY) if node.annotations else None
        if kind is not None and str(kind) == "parallel":
            _buffers_in(node, found)

    def evaluate(node: Any) -> None:
        if not isinstance(node.value, tvm.ir.Call):
            return
        # (Only a tl.fill is described: a walk's callback must not raise.)
        if is_tile_op(node.value) and str(node.value.op.name) == "tl.fill":
            op = describe(node.value)
            assert isinstance(op, FillOp)
            # A fill writes the same value to every element, so under the replicated
            # layout it writes each thread's copy: ``T.clear(acc)`` before per-thread
            # updates leaves the fragment per thread (kept as the block's one copy,
            # eight threads summing 1..8 read 288 instead of 36). Its value still counts.
            _buffers_in(op.value, found)
            return
        _buffers_in(node.value, found)

    def declare(node: Any) -> None:  # a view (T.reshape, T.view) of a buffer's memory
        viewed = viewed_buffer(node)
        if viewed is not None:
            found.append(viewed)

    tvm_ffi.structural_walk(
        body,
        [(tirx.For, loop), (tirx.Evaluate, evaluate), (tirx.DeclBuffer, declare)],
        order="pre",
    )
    return found


def privatize_per_thread_fragments(body: tirx.Stmt) -> tirx.Stmt:
    """``body`` (a block that runs its threads) with each fragment it allocates that no
    tile op (a fill aside), ``T.Parallel`` loop or other call mentions given ``local``
    scope."""
    fragments = [b for b in allocated_buffers(body) if scopes.is_fragment(b)]
    if not fragments:
        return body
    cooperative = _cooperative_buffers(body)
    private = [
        fragment
        for fragment in fragments
        if not any(fragment.same_as(other) for other in cooperative)
    ]
    if not private:
        return body

    def choose(buffer: Any) -> str | None:
        return scopes.LOCAL if any(buffer.same_as(p) for p in private) else None

    return rescope_buffers(body, choose)
