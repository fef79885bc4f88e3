"""A region's threads as lanes of its innermost loops: the lock-step schedule.

A region's nest over the threads (`thread_regions`) runs each thread's code in
turn: ``for t: for bk: body(t, bk)``. When the threads split memory between
them (thread ``t`` reads ``B[row, bk * 64 + t * 8 + k]``), each thread walks
its own strided slice, and consecutive elements belong to different threads.
Running the threads in **lock step** instead, as a GPU warp or an SPMD-on-SIMD
compiler does, moves the thread loop inside the loops every thread runs alike::

    for bk:                    # uniform: the same bounds for every thread
        for t:                 # the lanes: t * 8 + k runs over 64 contiguous elements
            for k: ...

Both are legal schedules of the GPU program within one region (no barrier in
between: in a race-free region no thread sees what another writes there), so
a race-free kernel computes the same values (floating-point sums in each
thread's own order: per thread nothing is reordered).

The rewrite of a nest ``for t (lane): S``:

* a loop of ``S`` that every thread runs alike (bounds free of the thread
  indices and of memory) and that contains further loops stays a loop, with
  the lane loop moved into its body;
* anything else (an innermost loop, a store, a branch, a loop with
  thread-dependent bounds) is a leaf: runs of consecutive leaves are wrapped
  in one loop over the lanes, each lane running them in turn (a sequential
  schedule of that piece, like the scalar lowering);
* thread-local arrays that ``S`` writes without indexing them by the thread
  (a thread's staging registers ``A_local[k]``, allocated once per block)
  get one copy per lane (``A_local[t, k]``), so lanes do not overwrite each
  other's values between the leaves.

The lane is the thread index whose next value moves the innermost loops' memory
accesses by no more than the innermost loop covers (``t * 8 + k`` with ``k <
8``: contiguous across lanes). Without one (every thread walks its own row),
the nest keeps its order; `thread_lanes` already laned its reductions.
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.thread_forwarding import forward_lane_copies
from tl_codegen_cpu.lowering.thread_ir import (
    contains,
    flatten_seq,
    is_local,
    reads_memory,
    uses_any,
)
from tl_codegen_cpu.lowering.thread_lane_copies import (
    flat_index,
    flat_size,
    privatize,
    stored_without_lane,
)
from tl_codegen_cpu.lowering.thread_lane_pairs import pair_lane_loops
from tl_codegen_cpu.lowering.thread_register_chunks import chunk_accumulations
from tl_codegen_cpu.lowering.vector_isa import VectorISA
from tl_ir.launch import rebuild_loop
from tl_ir.ops import const_int
from tl_ir.scopes import LOCAL
from tl_passes.buffer_rewrite import substitute_vars

#: The most bytes of per-lane copies one region may add (else it keeps its thread loops).
MAX_LANE_COPY_BYTES = 64 * 1024

#: The longest lane loop made a vector loop (as `cpu-lower-parallel-loops` does).
_MAX_VECTOR_LANES = 256


def _seq(stmts: list[Any]) -> Any:
    return stmts[0] if len(stmts) == 1 else tirx.SeqStmt(stmts)


def _is_uniform_loop(stmt: Any, threads: set[Any]) -> bool:
    return (
        isinstance(stmt, tirx.For)
        and stmt.kind == tirx.ForKind.SERIAL
        and not uses_any(stmt.min, threads)
        and not uses_any(stmt.extent, threads)
        and not reads_memory(stmt.min)
        and not reads_memory(stmt.extent)
    )


def _innermost_accesses(stmt: Any, threads: set[Any]) -> list[tuple[Any, list[Any]]]:
    """``(flat index, enclosing innermost-loop vars and extents)`` of every non-local
    load or store in an innermost loop reached through uniform loops."""
    found: list[tuple[Any, list[Any]]] = []

    def flat(buffer: Any, indices: Any) -> Any:
        index: Any = None
        for position, value in enumerate(indices):
            index = value if index is None else index * buffer.shape[position] + value
        return index

    def leaf(node: Any, loops: list[Any]) -> None:
        def load(n: Any) -> None:
            if not is_local(n.source) and len(n.indices):
                found.append((flat(n.source, n.indices), loops))

        def store(n: Any) -> None:
            if not is_local(n.buffer) and len(n.indices):
                found.append((flat(n.buffer, n.indices), loops))

        tvm_ffi.structural_walk(
            node, [(tvm.ir.TensorLoad, load), (tirx.BufferStore, store)], order="post"
        )

    def walk(node: Any) -> None:
        for item in flatten_seq(node):
            if _is_uniform_loop(item, threads) and contains(item.body, tirx.For):
                walk(item.body)
            elif isinstance(item, tirx.For) and not contains(item.body, tirx.For):
                leaf(item.body, [item])

    walk(stmt)
    return found


def lane_step(index: Any, var: Any, analyzer: Any) -> int | None:
    """How far ``index`` moves when ``var`` grows by one (None: not a constant)."""
    moved = tvm_ffi.structural_map(index, (tvm.ir.Var, lambda v: v + 1 if v.same_as(var) else v))
    return const_int(analyzer.simplify(moved - index))


def choose_lane(
    body: Any, thread_loops: list[tuple[Any, int]], analyzer: Any
) -> tuple[Any, int] | None:
    """The thread ``(var, extent)`` whose next value moves every innermost access by
    at most the innermost loop's extent (and some by a non-zero amount), or None."""
    threads = {v for v, _ in thread_loops}
    accesses = _innermost_accesses(body, threads)
    for var, extent in reversed(thread_loops):  # threadIdx.x first
        contiguous = False
        for index, loops in accesses:
            moved = lane_step(index, var, analyzer)
            if moved is None:
                contiguous = False
                break
            span = 1
            for loop in loops:
                loop_extent = const_int(loop.extent)
                if loop_extent is not None and uses_any(index, {loop.loop_var}):
                    span = loop_extent
            if abs(moved) > span:
                contiguous = False
                break
            contiguous = contiguous or moved != 0
        if contiguous:
            return var, extent
    return None


class _Lockstep:
    def __init__(self, lane: Any, extent: int, threads: set[Any], analyzer: Any) -> None:
        self.analyzer = analyzer
        self.lane = lane
        self.extent = extent
        self.threads = threads

    def lanes(self, leaves: list[Any]) -> Any:
        """The leaves run for every lane. An innermost loop of constant extent becomes
        one loop over ``lanes x extent`` (lane-major: ``t * 8 + k`` is its index), so a
        slice per thread is one contiguous vector loop; the rest run lane by lane."""
        if not all(self._fusable(leaf) for leaf in leaves):
            kind = tirx.ForKind.SERIAL
            if all(isinstance(leaf, tirx.BufferStore) for leaf in leaves) and self._vector(
                _seq(leaves), self.lane, self.extent
            ):
                kind = tirx.ForKind.VECTORIZED
            return tirx.For(self.lane, 0, self.extent, kind, _seq(leaves))
        # Statement by statement over all lanes (lock step), each statement fused;
        # consecutive fused loops that meet only at equal indices run as one loop.
        return _seq(_merge_same_index_loops([self._fuse(leaf) for leaf in leaves]))

    def _fusable(self, leaf: Any) -> bool:
        return (
            isinstance(leaf, tirx.For)
            and leaf.kind in (tirx.ForKind.SERIAL, tirx.ForKind.VECTORIZED)
            and const_int(leaf.min) == 0
            and const_int(leaf.extent) is not None
            and not contains(leaf.body, tirx.For)
            and is_copy_body(leaf.body)
        )

    def _fuse(self, leaf: Any) -> Any:
        inner = int(leaf.extent.value)
        fused = tirx.Var(f"{self.lane.name}_{leaf.loop_var.name}", "int32")
        mapping = {
            self.lane: tirx.floordiv(fused, inner),
            leaf.loop_var: tirx.floormod(fused, inner),
        }
        body = _simplify_indices(substitute_vars(leaf.body, mapping), self.analyzer)
        extent = self.extent * inner
        kind = tirx.ForKind.VECTORIZED if self._vector(body, fused, extent) else leaf.kind
        return tirx.For(fused, 0, extent, kind, body, annotations=leaf.annotations)

    def _vector(self, body: Any, var: Any, extent: int) -> bool:
        """Whether a lane loop of straight-line stores may be a vector loop: at most 256
        lanes, every store at a different element per lane (step 1: contiguous)."""
        if extent > _MAX_VECTOR_LANES:
            return False
        stores: list[Any] = []
        tvm_ffi.structural_walk(body, (tirx.BufferStore, stores.append), order="post")
        return all(
            len(s.indices) == 1 and lane_step(s.indices[0], var, self.analyzer) == 1 for s in stores
        )

    def push(self, stmt: Any) -> Any:
        out: list[Any] = []
        leaves: list[Any] = []

        def flush() -> None:
            if leaves:
                out.append(self.lanes(list(leaves)))
                leaves.clear()

        for item in flatten_seq(stmt):
            if isinstance(item, tirx.AllocBuffer) and is_local(item.buffer):
                flush()
                out.append(item)  # a per-lane array already (see thread_lane_copies.privatize)
                continue
            if _is_uniform_loop(item, self.threads) and (
                contains(item.body, tirx.For) or self._contiguous_inside(item)
            ):
                flush()
                loop = rebuild_loop(item, body=self.push(item.body))
                out.extend(self._promote(loop))
                continue
            leaves.append(item)
        flush()
        return _seq(out)

    def _contiguous_inside(self, loop: Any) -> bool:
        """Whether the lane moves every memory access of a straight-line loop body by at
        most one element (moving the lanes inside keeps them contiguous)."""
        steps: list[int | None] = []

        def index(buffer: Any, indices: Any) -> None:
            if not is_local(buffer) and len(indices):
                steps.append(lane_step(indices[-1], self.lane, self.analyzer))

        tvm_ffi.structural_walk(
            loop.body,
            [
                (tvm.ir.TensorLoad, lambda n: index(n.source, n.indices)),
                (tirx.BufferStore, lambda n: index(n.buffer, n.indices)),
            ],
            order="post",
        )
        return bool(steps) and all(s is not None and abs(s) <= 1 for s in steps)

    def _promote(self, loop: Any) -> list[Any]:
        """``loop`` with each thread-local array it accesses at one lane-dependent
        element only (a per-thread accumulator ``acc[t0 + 32 * t]``) kept in a per-lane
        array across it: loaded before, stored after (the same values; contiguous)."""
        accesses: dict[Any, list[tuple[bool, tuple[Any, ...]]]] = {}

        def record(buffer: Any, indices: Any, write: bool) -> None:
            for known in accesses:
                if known.same_as(buffer):
                    accesses[known].append((write, tuple(indices)))
                    return
            accesses[buffer] = [(write, tuple(indices))]

        tvm_ffi.structural_walk(
            loop.body,
            [
                (tvm.ir.TensorLoad, lambda n: record(n.source, n.indices, False)),
                (tirx.BufferStore, lambda n: record(n.buffer, n.indices, True)),
            ],
            order="post",
        )
        inner: set[Any] = {loop.loop_var}
        tvm_ffi.structural_walk(loop.body, (tirx.For, lambda f: inner.add(f.loop_var)))
        inner = {v for v in inner if not v.same_as(self.lane)}  # the lanes are outside
        before: list[Any] = []
        after: list[Any] = []
        for buffer, uses in accesses.items():
            first = uses[0][1]
            same = all(
                len(i) == len(first)
                and all(tvm_ffi.structural_equal(a, b) for a, b in zip(i, first, strict=True))
                for _, i in uses
            )
            if not (is_local(buffer) and same and any(w for w, _ in uses)):
                continue
            if not any(uses_any(i, {self.lane}) for i in first) or any(
                uses_any(i, inner) for i in first
            ):
                continue
            if lane_step(flat_index(buffer, first), self.lane, self.analyzer) == 1:
                continue  # already contiguous across the lanes
            kept = tirx.decl_buffer(
                (self.extent,), str(buffer.ty.dtype), name=f"{buffer.name}_lane", scope=LOCAL
            )
            loop = _replace_element(loop, buffer, first, kept, self.lane)
            before += [
                tirx.AllocBuffer(kept),
                self.lanes(
                    [tirx.BufferStore(kept, tirx.BufferLoad(buffer, list(first)), [self.lane])]
                ),
            ]
            after.append(
                self.lanes(
                    [tirx.BufferStore(buffer, tirx.BufferLoad(kept, [self.lane]), list(first))]
                )
            )
        return [*before, loop, *after]


def _merge_same_index_loops(loops: list[Any]) -> list[Any]:
    """Consecutive loops of one extent as one loop, where legal: every buffer any of them
    stores is accessed by all of them at one and the same index (so iteration ``f`` of
    a later loop depends only on iteration ``f`` of an earlier one). A staging copy and
    the loop reading it become one loop (no copy through memory between them)."""
    merged: list[Any] = []
    for loop in loops:
        previous = merged[-1] if merged else None
        if previous is not None and _extent_equal(previous, loop):
            body = substitute_vars(loop.body, {loop.loop_var: previous.loop_var})
            joined = tirx.SeqStmt([*flatten_seq(previous.body), *flatten_seq(body)])
            if _meets_at_one_index(joined):
                vector = tirx.ForKind.VECTORIZED
                both_vector = previous.kind == vector and loop.kind == vector
                kind = tirx.ForKind.VECTORIZED if both_vector else tirx.ForKind.SERIAL
                merged[-1] = rebuild_loop(previous, kind=kind, body=joined, annotations=None)
                continue
        merged.append(loop)
    return merged


def _extent_equal(a: Any, b: Any) -> bool:
    return const_int(a.extent) is not None and const_int(a.extent) == const_int(b.extent)


def _meets_at_one_index(body: Any) -> bool:
    accesses: list[tuple[Any, tuple[Any, ...]]] = []
    stored: list[Any] = []

    def load(node: Any) -> None:
        accesses.append((node.source, tuple(node.indices)))

    def store(node: Any) -> None:
        accesses.append((node.buffer, tuple(node.indices)))
        stored.append(node.buffer)

    tvm_ffi.structural_walk(
        body, [(tvm.ir.TensorLoad, load), (tirx.BufferStore, store)], order="post"
    )
    for buffer in stored:
        indices = [i for b, i in accesses if b.same_as(buffer)]
        first = indices[0]
        for other in indices[1:]:
            if len(other) != len(first) or not all(
                tvm_ffi.structural_equal(a, b) for a, b in zip(other, first, strict=True)
            ):
                return False
    return True


def _simplify_indices(stmt: Any, analyzer: Any) -> Any:
    def load(node: Any) -> Any:
        return tirx.BufferLoad(node.source, [analyzer.simplify(i) for i in node.indices])

    def store(node: Any) -> Any:
        indices = [analyzer.simplify(i) for i in node.indices]
        return tirx.BufferStore(node.buffer, node.value, indices)

    return tvm_ffi.structural_map(
        stmt, [(tvm.ir.TensorLoad, load), (tirx.BufferStore, store)], order="post"
    )


def _replace_element(stmt: Any, buffer: Any, indices: Any, kept: Any, lane: Any) -> Any:
    def load(node: Any) -> Any:
        return tirx.BufferLoad(kept, [lane]) if node.source.same_as(buffer) else node

    def store(node: Any) -> Any:
        if not node.buffer.same_as(buffer):
            return node
        return tirx.BufferStore(kept, node.value, [lane])

    return tvm_ffi.structural_map(
        stmt, [(tvm.ir.TensorLoad, load), (tirx.BufferStore, store)], order="post"
    )


def lockstep_nest(
    body: Any, thread_loops: list[tuple[Any, int]], isa: VectorISA | None = None
) -> tuple[Any, str] | tuple[None, str]:
    """``(the nest rewritten in lock step, description)`` for a region whose thread
    loops (outermost first, constant extents) are ``thread_loops`` and whose
    per-thread code is ``body``; ``(None, why not)`` when no thread index makes the
    innermost accesses contiguous or the body has no uniform loop to move it into."""
    analyzer = tvm.sym.Analyzer()
    threads = {v for v, _ in thread_loops}
    if not any(_is_uniform_loop(s, threads) for s in flatten_seq(body)):
        return None, "no loop every thread runs alike"
    chosen = choose_lane(body, thread_loops, analyzer)
    if chosen is None:
        return None, "no thread index is contiguous in memory"
    lane, extent = chosen
    private = stored_without_lane(body, lane)
    copies = 0
    for buffer in private:
        if not all(isinstance(d, tirx.IntImm) for d in buffer.shape):
            return None, f"{buffer.name} needs per-lane copies but has no constant shape"
        copies += extent * flat_size(buffer) * tvm.DataType(str(buffer.ty.dtype)).bits // 8
    if copies > MAX_LANE_COPY_BYTES:
        # The copies live on the block's stack (cpu-stack-block-locals' budget is 1 MiB).
        return None, f"per-lane copies would take {copies} bytes (limit {MAX_LANE_COPY_BYTES})"
    inside: list[Any] = []
    tvm_ffi.structural_walk(body, (tirx.AllocBuffer, lambda a: inside.append(a.buffer)))
    body, widened = privatize(body, private, lane, extent)
    pushed = _Lockstep(lane, extent, threads, analyzer).push(body)
    # Staging registers read in the loop body that stores them: read the stored value.
    pushed, forwarded = forward_lane_copies(pushed, widened)
    # Packed operands read at ``f // 2``: vector loops over pairs of lanes (affine).
    pushed, grouped = pair_lane_loops(pushed)
    if isa is not None:  # per-lane sums in register-wide pieces (kept in registers)
        pushed = chunk_accumulations(pushed, isa)
    # Per-lane copies of arrays allocated once per block are allocated in the nest.
    allocations = [
        tirx.AllocBuffer(new)
        for old, new in zip(private, widened, strict=True)
        if not any(old.same_as(b) for b in inside) and not any(new.same_as(f) for f in forwarded)
    ]
    nest: Any = _seq([*allocations, pushed]) if allocations else pushed
    for var, loop_extent in reversed(thread_loops):
        if not var.same_as(lane):
            nest = tirx.For(var, 0, loop_extent, tirx.ForKind.SERIAL, nest)
    kept = [
        str(old.name)
        for old, new in zip(private, widened, strict=True)
        if not any(new.same_as(f) for f in forwarded)
    ]
    gone = [str(old.name) for old in private if str(old.name) not in kept]
    where = f"; per-lane copies of {', '.join(kept)}" if kept else ""
    if gone:
        where += f"; {', '.join(gone)} forwarded into their reads"
    if grouped:
        where += f"; {'; '.join(grouped)}"
    return nest, f"threads {lane.name} as {extent} lanes inside the uniform loops{where}"


def is_copy_body(stmt: Any) -> bool:
    """Only stores, serial loops and sequences (no branches, calls or allocations)."""
    for item in flatten_seq(stmt):
        if isinstance(item, tirx.For):
            if item.kind != tirx.ForKind.SERIAL or not is_copy_body(item.body):
                return False
        elif not isinstance(item, tirx.BufferStore):
            return False
    return True
