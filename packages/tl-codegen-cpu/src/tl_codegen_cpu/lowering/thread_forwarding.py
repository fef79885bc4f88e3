"""Staging copies forwarded into the code that reads them (used by `cpu-lower-launch`).

A GPU kernel stages operands through memory its threads share, then reads them
after a barrier. TileLang's naive GEMV::

    for bk in T.serial(K // BLOCK_K):
        for tk in T.serial(BLOCK_K):               # region 1: the staging copy
            A_shared[tk] = A[bk * BLOCK_K + tk]
            B_shared[tn, tk] = B[bn * BLOCK_N + tn, bk * BLOCK_K + tk]
        for tk in T.serial(BLOCK_K):               # region 2 (after a barrier)
            acc[0] += A_shared[tk] * B_shared[tn, tk]

On the CPU region 1 copies every element through the block's stack and region 2
walks it again, with a fold of each thread's sum per block of K. Two rewrites
make such a block one contiguous walk of K per thread:

* `forward_staging` (across a barrier): a region that only **stages** (a perfect
  nest of serial loops, every thread's or not, around stores into block-shared
  buffers, each store covering its whole buffer: every index is a distinct loop
  variable running over its dimension, and the stored value is fixed by the
  element: it reads no local or staged buffer, calls nothing, and names no loop
  variable but the store's indices) is forwarded into the statements after it
  in the same sequence: each load of a staged element becomes the staged value
  at that element (the buffer is whole after the barrier, so every in-bounds
  load reads what the copy wrote). It stops at the first statement that writes
  a staged buffer or one the values read (or runs a call that may). A staged
  buffer nothing reads any more is dropped with its stores and allocation.
* `interchange_private_loop`: a loop every thread runs alike whose body is then
  one region (``for bk: for tn: S``) with ``S`` storing only into thread-local
  arrays becomes ``for tn: for bk: S``. Each thread's iterations keep their
  order, and no thread reads what another writes inside the loop (it writes
  nothing shared), so dropping the barriers between the iterations changes no
  value. `thread_lanes` then keeps one partial vector per thread across ``bk``.

`forward_lane_copies` is the same forwarding inside one straight-line loop body
(a lock-step loop that stages into per-lane registers and sums them at once:
``A_lanes[i] = A[..]; acc[i] += A_lanes[i] * ..`` reads ``A[..]`` directly), so
the registers are neither stored nor reloaded.

Each rewrite is a proof over the IR; where one fails the code stays as it was
(the scalar region path). What was done is recorded on the thread nest under
`MERGED_KEY` and shows in its ``tl.cpu_thread_path`` (TL_DUMP_IR).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.thread_ir import (
    THREAD_NEST_KEY,
    contains,
    flatten_seq,
    is_local,
    reads_buffer,
    reads_memory,
    uses_any,
)
from tl_ir.launch import rebuild_loop
from tl_ir.ops import const_int
from tl_passes.buffer_rewrite import substitute_vars

#: Annotation on a thread nest that `forward_staging` / `interchange_private_loop`
#: made: what was done (prefixed to its ``tl.cpu_thread_path``).
MERGED_KEY = "tl.cpu_thread_merged"


def _seq(stmts: list[Any]) -> Any:
    if not stmts:
        return tirx.Evaluate(tirx.const(0, "int32"))
    return stmts[0] if len(stmts) == 1 else tirx.SeqStmt(stmts)


def _is_no_op(stmt: Any) -> bool:
    return isinstance(stmt, tirx.Evaluate) and isinstance(stmt.value, tirx.IntImm)


def _find(buffers: list[Any], buffer: Any) -> Any:
    for known in buffers:
        if known.same_as(buffer):
            return known
    return None


def _stored(stmt: Any) -> list[Any]:
    found: list[Any] = []

    def store(node: Any) -> None:
        if _find(found, node.buffer) is None:
            found.append(node.buffer)

    tvm_ffi.structural_walk(stmt, (tirx.BufferStore, store), order="post")
    return found


def _loaded(stmt: Any) -> list[Any]:
    found: list[Any] = []

    def load(node: Any) -> None:
        if _find(found, node.source) is None:
            found.append(node.source)

    tvm_ffi.structural_walk(stmt, (tvm.ir.TensorLoad, load), order="post")
    return found


def _calls_out(stmt: Any) -> bool:
    """Whether ``stmt`` evaluates a call (an atomic, a tile op, an extern: it may write
    memory the rewrites cannot see)."""
    found = False

    def visit(evaluate: Any) -> None:
        nonlocal found
        if not isinstance(evaluate.value, tirx.IntImm):
            found = True

    tvm_ffi.structural_walk(stmt, (tirx.Evaluate, visit), order="post")
    return found


# ---------------------------------------------------------------- across a barrier


@dataclass(frozen=True)
class _Staging:
    """A staging region: its store per buffer, by element (index Var per dimension)."""

    stmt: Any
    stores: tuple[Any, ...]
    index_vars: tuple[tuple[Any, ...], ...]  # per store, the Var of each dimension
    sources: tuple[Any, ...]  # buffers the stored values read


def _staging(stmt: Any, block_buffers: list[Any]) -> _Staging | None:
    """``stmt`` as a staging region (module docstring), or None."""
    loops: dict[Any, int] = {}
    body = stmt
    while isinstance(body, tirx.For):
        extent = const_int(body.extent)
        if body.kind != tirx.ForKind.SERIAL or const_int(body.min) != 0 or extent is None:
            return None
        loops[body.loop_var] = extent
        body = body.body
    items = flatten_seq(body)
    if not loops or not all(isinstance(s, tirx.BufferStore) for s in items):
        return None
    buffers = [s.buffer for s in items]
    index_vars: list[tuple[Any, ...]] = []
    sources: list[Any] = []
    for store in items:
        buffer = store.buffer
        if is_local(buffer) or _find(block_buffers, buffer) is None:
            return None  # only the block's own shared buffers (never its outputs)
        if sum(1 for b in buffers if b.same_as(buffer)) != 1:
            return None
        used: list[Any] = []
        for index, dim in zip(store.indices, buffer.shape, strict=True):
            if not isinstance(index, tvm.ir.Var) or index not in loops:
                return None
            if any(index.same_as(u) for u in used) or loops[index] != const_int(dim):
                return None
            used.append(index)
        value = store.value
        if contains(value, tvm.ir.Call) or uses_any(value, set(loops) - set(used)):
            return None
        read = _loaded(value)
        if any(is_local(b) or _find(buffers, b) is not None for b in read):
            return None
        index_vars.append(tuple(used))
        sources += [b for b in read if _find(sources, b) is None]
    return _Staging(stmt, tuple(items), tuple(index_vars), tuple(sources))


def _forward_into(stmt: Any, staging: _Staging) -> Any:
    def load(node: Any) -> Any:
        for store, variables in zip(staging.stores, staging.index_vars, strict=True):
            if node.source.same_as(store.buffer):
                mapping = dict(zip(variables, node.indices, strict=True))
                return substitute_vars(tirx.Evaluate(store.value), mapping).value
        return node

    return tvm_ffi.structural_map(stmt, (tvm.ir.TensorLoad, load), order="post")


def _blocks_forwarding(stmt: Any, staging: _Staging) -> bool:
    written = _stored(stmt)
    staged = [s.buffer for s in staging.stores]
    return _calls_out(stmt) or any(
        _find(staged, b) is not None or _find(list(staging.sources), b) is not None for b in written
    )


def forward_staging(block: Any) -> tuple[Any, list[str]]:
    """``block`` (a block body split into thread nests, per-thread locals expanded) with
    its staging regions forwarded into their readers and dropped where dead (module
    docstring); and the names of the buffers whose staging was dropped."""
    block_buffers: list[Any] = []
    tvm_ffi.structural_walk(block, (tirx.AllocBuffer, lambda a: block_buffers.append(a.buffer)))
    forwarded: list[_Staging] = []

    def sequence(seq: Any) -> Any:
        items = list(seq.seq)
        for position, item in enumerate(items):
            staging = _staging(item, block_buffers)
            if staging is None:
                continue
            reached = False
            for later in range(position + 1, len(items)):
                if _blocks_forwarding(items[later], staging):
                    break
                rewritten = _forward_into(items[later], staging)
                if not rewritten.same_as(items[later]):
                    reached = True
                    names = ", ".join(str(s.buffer.name) for s in staging.stores)
                    rewritten = _noted(
                        rewritten, f"staging of {names} forwarded across the barrier"
                    )
                items[later] = rewritten
            if reached:
                forwarded.append(staging)
        return tirx.SeqStmt(items)

    result = tvm_ffi.structural_map(block, (tirx.SeqStmt, sequence), order="post")
    still_read = _loaded(result)
    dead = [
        s.buffer
        for staging in forwarded
        for s in staging.stores
        if _find(still_read, s.buffer) is None
    ]
    if not dead:
        return result, []

    def drop_store(store: Any) -> Any:
        if _find(dead, store.buffer) is None:
            return store
        return tirx.Evaluate(tirx.const(0, "int32"))

    def drop_alloc(seq: Any) -> Any:
        kept = [
            s
            for s in seq.seq
            if not (isinstance(s, tirx.AllocBuffer) and _find(dead, s.buffer) is not None)
        ]
        return _seq(kept)

    result = tvm_ffi.structural_map(result, (tirx.BufferStore, drop_store), order="post")
    result = _drop_empty_loops(result)
    result = tvm_ffi.structural_map(result, (tirx.SeqStmt, drop_alloc), order="post")
    return result, [str(b.name) for b in dead]


def _drop_empty_loops(stmt: Any) -> Any:
    """Loops (and sequences) whose body does nothing, removed."""

    def loop(node: Any) -> Any:
        return tirx.Evaluate(tirx.const(0, "int32")) if _is_no_op(node.body) else node

    def sequence(node: Any) -> Any:
        kept = [s for s in node.seq if not _is_no_op(s)]
        return _seq(kept)

    return tvm_ffi.structural_map(stmt, [(tirx.For, loop), (tirx.SeqStmt, sequence)], order="post")


def interchange_private_loop(loop: Any, threads: tuple[Any, ...], note: str) -> Any | None:
    """``for k: <one thread nest over S>`` as ``<the thread nest over (for k: S)>`` when
    ``k`` runs alike for every thread and ``S`` writes only thread-local arrays (module
    docstring), or None. ``note`` is recorded on the nest (`MERGED_KEY`)."""
    if not isinstance(loop, tirx.For) or loop.kind != tirx.ForKind.SERIAL:
        return None
    bounds = (loop.min, loop.extent)
    if any(uses_any(b, set(threads)) or reads_memory(b) for b in bounds):
        return None
    items = [s for s in flatten_seq(loop.body) if not _is_no_op(s)]
    if len(items) != 1 or not _is_nest(items[0]):
        return None
    chain: list[Any] = []
    body: Any = items[0]
    while isinstance(body, tirx.For) and any(body.loop_var.same_as(t) for t in threads):
        chain.append(body)
        body = body.body
    if _calls_out(body) or any(not is_local(b) for b in _stored(body)):
        return None
    nest: Any = rebuild_loop(loop, body=body)
    for thread_loop in reversed(chain):
        nest = rebuild_loop(thread_loop, body=nest)
    return _noted(nest, note)


def _noted(stmt: Any, note: str) -> Any:
    """``stmt`` (a thread nest: else unchanged) with ``note`` added to its `MERGED_KEY`."""
    if not _is_nest(stmt):
        return stmt
    annotations = dict(stmt.annotations)
    known = annotations.get(MERGED_KEY)
    earlier = str(known.value) if isinstance(known, tvm.ir.StringImm) else ""
    annotations[MERGED_KEY] = tvm.ir.StringImm(f"{earlier}; {note}" if earlier else note)
    return rebuild_loop(stmt, annotations=annotations)


def _is_nest(stmt: Any) -> bool:
    return (
        isinstance(stmt, tirx.For)
        and stmt.annotations is not None
        and THREAD_NEST_KEY in stmt.annotations
    )


def merge_across_barriers(block: Any, threads: tuple[Any, ...]) -> Any:
    """`forward_staging`, then `interchange_private_loop` on every loop of the block
    outside the thread nests (innermost first)."""
    forwarded, dropped = forward_staging(block)
    if not dropped:
        return block

    def loop(node: Any) -> Any:
        if _is_nest(node):
            return node
        note = f"the loop over {node.loop_var.name} moved inside"
        swapped = interchange_private_loop(node, threads, note)
        return node if swapped is None else swapped

    return _skip_nests_map(forwarded, loop)


def _skip_nests_map(stmt: Any, loop: Any) -> Any:
    """``loop`` applied post-order to every For outside the thread nests."""
    if isinstance(stmt, tirx.SeqStmt):
        return tirx.SeqStmt([_skip_nests_map(s, loop) for s in stmt.seq])
    if _is_nest(stmt):
        return stmt
    if isinstance(stmt, tirx.For):
        return loop(rebuild_loop(stmt, body=_skip_nests_map(stmt.body, loop)))
    if isinstance(stmt, tirx.IfThenElse):
        other = None if stmt.else_case is None else _skip_nests_map(stmt.else_case, loop)
        return tirx.IfThenElse(stmt.condition, _skip_nests_map(stmt.then_case, loop), other)
    if isinstance(stmt, tirx.LetStmt):
        return tirx.LetStmt(stmt.var, stmt.value, _skip_nests_map(stmt.body, loop))
    if isinstance(stmt, tirx.AttrStmt):
        body = _skip_nests_map(stmt.body, loop)
        return tirx.AttrStmt(stmt.node, stmt.attr_key, stmt.value, body)
    if isinstance(stmt, tirx.While):
        return tirx.While(stmt.condition, _skip_nests_map(stmt.body, loop))
    return stmt


# ---------------------------------------------------------------- inside one loop body


def forward_lane_copies(stmt: Any, candidates: list[Any]) -> tuple[Any, list[Any]]:
    """``stmt`` with loads of the thread-local ``candidates`` (per-lane staging copies)
    replaced by the value stored at the same element earlier in the same straight-line
    loop body (nothing stored in between into what that value reads); candidates that
    nothing reads any more lose their stores. Returns the statement and the dead ones."""
    if not candidates:
        return stmt, []

    def body_of(loop: Any) -> Any:
        items = flatten_seq(loop.body)
        if not all(isinstance(s, tirx.BufferStore) for s in items):
            return loop
        known: list[tuple[Any, tuple[Any, ...], Any]] = []  # (buffer, indices, value)

        def load(node: Any) -> Any:
            for buffer, indices, value in known:
                if node.source.same_as(buffer) and _same_indices(node.indices, indices):
                    return value
            return node

        rewritten: list[Any] = []
        for store in items:
            value = tvm_ffi.structural_map(store.value, (tvm.ir.TensorLoad, load), order="post")
            known = [
                entry
                for entry in known
                if not entry[0].same_as(store.buffer) and not reads_buffer(entry[2], store.buffer)
            ]
            if _find(candidates, store.buffer) is not None and not reads_buffer(
                value, store.buffer
            ):
                known.append((store.buffer, tuple(store.indices), value))
            rewritten.append(tirx.BufferStore(store.buffer, value, list(store.indices)))
        return rebuild_loop(loop, body=_seq(rewritten))

    result = tvm_ffi.structural_map(stmt, (tirx.For, body_of), order="post")
    still_read = _loaded(result)
    dead = [b for b in candidates if _find(still_read, b) is None]
    if not dead:
        return result, []

    def drop_store(store: Any) -> Any:
        if _find(dead, store.buffer) is None:
            return store
        return tirx.Evaluate(tirx.const(0, "int32"))

    def drop_alloc(alloc: Any) -> Any:
        if _find(dead, alloc.buffer) is None:
            return alloc
        return tirx.Evaluate(tirx.const(0, "int32"))

    result = tvm_ffi.structural_map(
        result, [(tirx.BufferStore, drop_store), (tirx.AllocBuffer, drop_alloc)], order="post"
    )
    return _drop_empty_loops(result), dead


def _same_indices(a: Any, b: Any) -> bool:
    return len(a) == len(b) and all(
        tvm_ffi.structural_equal(x, y) for x, y in zip(a, b, strict=True)
    )
