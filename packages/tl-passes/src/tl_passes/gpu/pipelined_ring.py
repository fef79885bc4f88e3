"""`gpu-pipeline-loops`: ``T.Pipelined(n, num_stages=k)`` as a k-stage ring of shared tiles.

On a target whose `GpuTraits.async_copy` is available for the TVM target, a
pipelined loop with ``k >= 2`` stages becomes a ring. Each shared tile the
loop body fills with a ``T.copy`` from global memory (a *ring copy*) gets a
leading stage dim of ``k`` slots, iteration ``i`` working on slot ``i % k``::

    for s in 0 .. k-2:               # prologue: the first k-1 tiles
        async copies of iteration s into slot s;  commit
    for i in 0 .. n-1:
        wait(k-2); barrier            # tile i has landed, for every thread
        the body, on slot i % k       # (ring copies replaced by ...)
        if i + k-1 < n: async copies of iteration i+k-1 into slot (i+k-1) % k
        commit                        # (one group per iteration, empty at the end)
    wait(0)                           # the tail drains

Each iteration commits exactly one group, so before the wait of iteration
``i`` there are ``k-1+i`` groups and ``wait(k-2)`` leaves the one holding tile
``i`` complete. The refill of iteration ``i`` writes the slot last read in
iteration ``i-1``, whose reads all finished before the barrier at the top of
iteration ``i`` (write after read across iterations); tile ``i`` is read only
after that barrier (read after write). `gpu-insert-barriers` therefore does not
count the async copies (`ASYNC_COPY_KEY` statements) as accesses: the ring's
own barrier orders them. The prologue's copies are the exception it does
order: a slot's first fill may land in shared memory that a tile dead before
the ring held (the dynamic shared memory merge reuses it), while other warps
may still be reading that tile (`is_prologue_copy`). The async copies are lowered by
`tl_passes.gpu.async_copy`.

A copy is a ring copy when it copies from global into a shared tile that is
allocated outside the loop, used nowhere outside it, written by no other
statement of the body, and read only after the copy in the body; its source
region may depend on the loop variable and on values fixed before the loop
(nothing computed inside the loop, no buffer loads). Other copies stay where
they are and run in order. ``num_stages`` 0 or 1, no async copies on the
target, or no ring copy: the loop runs in order (as ``lower-pipelined-loops``).

TileLang's manual schedule is honoured as far as this ring can express it:
``stage`` must put every ring copy at stage 0 and every other statement at
the last stage (``num_stages - 1``; a copy at the last stage runs in order);
``order`` is the emission order of the body's statements after the wait
(any order is legal, each refill writes a slot nobody reads in that
iteration); ``group`` is accepted when each group's statements share one
stage. Other schedules raise `NotImplementedError` naming the annotation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir import scopes
from tl_ir.launch import (
    LOOP_KIND_KEY,
    NUM_STAGES_KEY,
    PIPELINE_GROUP_KEY,
    PIPELINE_ORDER_KEY,
    PIPELINE_SCHEDULE_KEYS,
    PIPELINE_STAGE_KEY,
    annotations_without,
)
from tl_passes.gpu.barriers import barrier
from tl_passes.gpu.tir_build import const_int, int_imm
from tl_passes.gpu.traits import PORTABLE_TRAITS, AsyncCopy, GpuTraits
from tl_passes.lower_pipelined_loops import in_order
from tl_passes.pass_base import PassContext, PrimFuncPass

#: Attribute key of a statement holding one tile copy to start asynchronously.
ASYNC_COPY_KEY = "tl.async_copy"
#: Loop annotation naming the shared tiles a ring holds (for IR dumps and tests).
RING_BUFFERS_KEY = "tl.pipeline_ring"


def is_async_copy(stmt: Any) -> bool:
    """Whether ``stmt`` is an `ASYNC_COPY_KEY` statement (a copy started asynchronously)."""
    return isinstance(stmt, tirx.AttrStmt) and str(stmt.attr_key) == ASYNC_COPY_KEY


def is_prologue_copy(stmt: Any) -> bool:
    """Whether ``stmt`` is an async copy of a ring's prologue (a first fill of a slot).

    Its destination may be shared memory that tiles dead before the ring occupied (the
    dynamic shared memory merge reuses it), so unlike a refill it is not ordered by the
    ring's own barrier; `gpu-insert-barriers` orders it after those tiles' last accesses.
    """
    return is_async_copy(stmt) and str(stmt.node.value) == _PROLOGUE


_PROLOGUE = "prologue"


def _async(copy_stmt: Any, prologue: bool = False) -> Any:
    node = tvm.ir.StringImm(_PROLOGUE if prologue else "ring")
    return tirx.AttrStmt(node, ASYNC_COPY_KEY, int_imm(1), copy_stmt)


def _extern(name: str, *args: Any) -> Any:
    return tirx.Evaluate(tirx.call_extern("void", name, *args))


def _flat(stmt: Any) -> list[Any]:
    return list(stmt.seq) if isinstance(stmt, tirx.SeqStmt) else [stmt]


def _seq(stmts: Sequence[Any]) -> Any:
    flat: list[Any] = []
    for stmt in stmts:
        flat.extend(_flat(stmt))
    if not flat:
        return tirx.Evaluate(int_imm(0))
    return flat[0] if len(flat) == 1 else tirx.SeqStmt(flat)


def _copy_op(stmt: Any) -> Any | None:
    from tl_ir import ops as tile

    if isinstance(stmt, tirx.Evaluate) and tile.is_tile_op(stmt.value):
        op = tile.describe(stmt.value)
        if isinstance(op, tile.CopyOp):
            return op
    return None


def _scope(buffer: Any) -> str:
    return scopes.buffer_scope(buffer)


def _buffer_uses(stmt: Any, buffer: Any) -> tuple[int, int]:
    """(loads, stores) of ``buffer`` in ``stmt``; tile-op regions count by access."""
    loads = [0]
    stores = [0]

    def visit(node: Any) -> None:
        if isinstance(node, tvm.ir.TensorLoad) and node.source.same_as(buffer):
            loads[0] += 1
        elif isinstance(node, tirx.BufferStore) and node.buffer.same_as(buffer):
            stores[0] += 1

    tvm_ffi.structural_walk(stmt, visit, order="pre")
    return loads[0], stores[0]


def _writes(stmt: Any, buffer: Any) -> bool:
    from tl_ir import ops as tile

    found = [False]

    def visit(call: Any) -> None:
        if not tile.is_tile_op(call):
            return
        for arg in call.args:
            is_region = isinstance(arg, tvm.ir.Call) and str(getattr(arg.op, "name", "")) == (
                "tl.region"
            )
            if is_region and arg.args[0].source.same_as(buffer) and int(arg.args[1].value) & 2:
                found[0] = True

    tvm_ffi.structural_walk(stmt, (tvm.ir.Call, visit), order="pre")
    return found[0] or _buffer_uses(stmt, buffer)[1] > 0


def _defined_vars(stmt: Any) -> set[Any]:
    """Variables bound inside ``stmt`` (loop variables, let bindings)."""
    found: list[Any] = []

    def visit(node: Any) -> None:
        if isinstance(node, tirx.For):
            found.append(node.loop_var)
        elif isinstance(node, (tirx.LetStmt, tirx.Bind)):
            found.append(node.var)

    tvm_ffi.structural_walk(stmt, visit, order="pre")
    return set(found)


def _free_of(expr: Any, banned: set[Any]) -> bool:
    """Whether ``expr`` reads no buffer and none of the ``banned`` variables."""
    ok = [True]

    def visit(node: Any) -> None:
        if isinstance(node, tvm.ir.TensorLoad) or (
            isinstance(node, tirx.Var) and any(node.same_as(v) for v in banned)
        ):
            ok[0] = False

    tvm_ffi.structural_walk(expr, visit, order="pre")
    return ok[0]


def _substitute(stmt: Any, var: Any, value: Any) -> Any:
    return tvm_ffi.structural_map(
        stmt, (tvm.ir.Var, lambda v: value if v.same_as(var) else v), order="post"
    )


def _ring_rewrite(stmt: Any, rings: dict[Any, Any], slot: Any) -> Any:
    """``stmt`` with every access of a ringed tile on its ``slot`` (regions get a unit
    stage dim, element accesses a leading index).

    The ``dim`` of a ``T.reduce_*``/``T.cum*`` reading a ringed tile counts the dims of
    its source region, so it moves up by one with the stage dim. `gpu.reduce` maps the
    destination by the source's non-unit dims, so the unit stage dim drops out (the
    ``T.cum*`` lowering does not yet: a scan of a ringed tile still fails to lower)."""
    from tl_ir import ops as tile

    def along(call: Any) -> Any:
        if not tile.is_tile_op(call):
            return call
        op = tile.describe(call)
        if not isinstance(op, (tile.ReduceOp, tile.CumsumOp)):
            return call
        if not any(op.src.buffer.same_as(old) for old in rings):
            return call
        return tile.encode(replace(op, dim=op.dim + 1))

    def region(call: Any) -> Any:
        if str(getattr(call.op, "name", "")) != "tl.region":
            return call
        load = call.args[0]
        for old, new in rings.items():
            if load.source.same_as(old):
                return tile.region_call(
                    tile.Region(
                        buffer=new,
                        mins=(slot, *load.indices),
                        extents=(int_imm(1), *call.args[2:]),
                        access=int(call.args[1].value),
                    )
                )
        return call

    def element(node: Any) -> Any:
        if isinstance(node, tvm.ir.TensorLoad):
            for old, new in rings.items():
                if node.source.same_as(old):
                    return tirx.BufferLoad(new, [slot, *node.indices])
        elif isinstance(node, tirx.BufferStore):
            for old, new in rings.items():
                if node.buffer.same_as(old):
                    return tirx.BufferStore(new, node.value, [slot, *node.indices])
        return node

    stmt = tvm_ffi.structural_map(stmt, (tvm.ir.Call, along), order="post")
    stmt = tvm_ffi.structural_map(stmt, (tvm.ir.Call, region), order="post")
    return tvm_ffi.structural_map(stmt, element, order="post")


def _int_list(annotations: Any, key: str) -> list[int] | None:
    if annotations is None or key not in annotations:
        return None
    return [int(v) for v in annotations[key]]


@dataclass
class _Ring:
    """What one pipelined loop's ring is built from."""

    loop: Any
    stages: int
    statements: list[Any]
    ring_copies: list[int]
    rings: dict[Any, Any] = field(default_factory=dict)
    emission: list[int] = field(default_factory=list)


def _plan(loop: Any, stages: int, body_root: Any) -> _Ring | None:
    """The ring of ``loop`` (None: nothing to ring, the loop runs in order).

    Raises:
        NotImplementedError: the loop's ``order``/``stage``/``group`` schedule is one
            the ring cannot express.
    """
    statements = _flat(loop.body)
    stage = _int_list(loop.annotations, PIPELINE_STAGE_KEY)
    # A copy the schedule puts at the last stage runs in order, with the compute.
    in_order_positions = {i for i, v in enumerate(stage or []) if v == stages - 1}
    inner = _defined_vars(loop.body)
    candidates: dict[Any, list[int]] = {}
    for position, stmt in enumerate(statements):
        op = _copy_op(stmt)
        if op is None or op.src.scope != scopes.GLOBAL or op.dst.scope not in scopes.SHARED_SCOPES:
            continue
        if position in in_order_positions or op.src.dtype != op.dst.dtype:
            continue
        if not all(_free_of(m, inner) for m in op.src.mins) or not all(
            const_int(m) is not None for m in op.dst.mins
        ):
            continue
        if any(const_int(e) is None for e in (*op.src.extents, *op.dst.extents)):
            continue
        candidates.setdefault(op.dst.buffer, []).append(position)
    ring_copies: list[int] = []
    rings: dict[Any, Any] = {}
    allocated_inside: list[Any] = []
    tvm_ffi.structural_walk(
        loop.body, (tirx.AllocBuffer, lambda a: allocated_inside.append(a.buffer)), order="pre"
    )
    for buffer, positions in candidates.items():
        if any(buffer.same_as(b) for b in allocated_inside):
            continue  # a tile of one iteration: nothing to prefetch into
        if _buffer_uses(body_root, buffer) != _buffer_uses(loop.body, buffer):
            continue  # used outside the loop: keep it in order
        others = [i for i in range(len(statements)) if i not in positions]
        if any(_writes(statements[i], buffer) for i in others):
            continue
        if any(i < max(positions) and sum(_buffer_uses(statements[i], buffer)) for i in others):
            continue  # read before it is filled: the previous iteration's tile
        ring_copies.extend(positions)
        rings[buffer] = tirx.decl_buffer(
            (stages, *buffer.shape),
            str(buffer.ty.dtype),
            name=str(buffer.name),
            scope=_scope(buffer),
            data_alignment=16,
        )
    ring = _Ring(loop, stages, statements, sorted(ring_copies), rings)
    ring.emission = _check_schedule(ring)
    return ring if rings else None


def _check_schedule(ring: _Ring) -> list[int]:
    """The emission order of ``ring``'s statements after the wait, from the loop's
    ``order``/``stage``/``group`` (program order when absent).

    Raises:
        NotImplementedError: a schedule this ring cannot express (named).
    """
    annotations = ring.loop.annotations
    count = len(ring.statements)
    order = _int_list(annotations, PIPELINE_ORDER_KEY)
    stage = _int_list(annotations, PIPELINE_STAGE_KEY)
    group = (
        annotations[PIPELINE_GROUP_KEY]
        if annotations is not None and PIPELINE_GROUP_KEY in annotations
        else []
    )
    last = ring.stages - 1
    for key, values in (("order", order), ("stage", stage)):
        if values is not None and len(values) != count:
            raise NotImplementedError(
                f"T.Pipelined({key}={values}): expected one entry per statement of the loop "
                f"body ({count}); entries for scalar bindings or nested statements are not "
                "implemented"
            )
    if stage is not None:
        for position, value in enumerate(stage):
            if value == last or (value == 0 and position in ring.ring_copies):
                continue
            raise NotImplementedError(
                f"T.Pipelined(stage={stage}): statement {position} at stage {value}; the "
                "async-copy ring implements copies from global into shared tiles (used only "
                f"in the loop) at stage 0 and every other statement at the last stage ({last})"
            )
    for members in group:
        positions = [int(m) for m in members]
        kinds = {p in ring.ring_copies for p in positions}
        if len(kinds) > 1:
            raise NotImplementedError(
                f"T.Pipelined(group={[[int(m) for m in g] for g in group]}): a group mixing "
                "stage-0 copies and last-stage statements is not implemented"
            )
    if order is None:
        return list(range(count))
    if sorted(order) != list(range(count)):
        raise NotImplementedError(
            f"T.Pipelined(order={order}): expected a permutation of 0..{count - 1}"
        )
    return sorted(range(count), key=lambda position: order[position])


def build_ring(ring: _Ring, copy: AsyncCopy) -> Any:
    """The prologue, steady-state loop and drain of ``ring`` (module docstring)."""
    loop, stages = ring.loop, ring.stages
    emission = ring.emission
    rings = ring.rings
    pending = stages - 2
    if pending > copy.max_pending:
        raise NotImplementedError(
            f"T.Pipelined(num_stages={stages}): the target's async copies wait for at most "
            f"{copy.max_pending} pending groups, so at most {copy.max_pending + 2} stages"
        )
    var, start, extent = loop.loop_var, loop.min, loop.extent
    count = const_int(extent)

    def copies_of(iteration: Any, slot: Any, prologue: bool = False) -> list[Any]:
        out = []
        for position in ring.ring_copies:
            stmt = _substitute(ring.statements[position], var, iteration)
            out.append(_async(_ring_rewrite(stmt, rings, slot), prologue))
        return out

    commit = _extern(copy.commit)
    prologue: list[Any] = []
    for s in range(stages - 1):
        issued = _seq(copies_of(start + s, int_imm(s), prologue=True))
        if count is None:
            prologue.append(tirx.IfThenElse(s < extent, issued, None))
        elif s < count:
            prologue.append(issued)
        prologue.append(commit)
    step = var - start
    slot = tirx.floormod(step, stages)
    refill_slot = tirx.floormod(step + (stages - 1), stages)
    body: list[Any] = [_extern(copy.wait, int_imm(pending)), barrier()]
    for position in emission:
        if position in ring.ring_copies:
            refill = _seq(copies_of(var + (stages - 1), refill_slot))
            if position == min(ring.ring_copies):
                body.append(tirx.IfThenElse(step + (stages - 1) < extent, refill, None))
            continue
        body.append(_ring_rewrite(ring.statements[position], rings, slot))
    # The refill is emitted once, where the first ring copy stands in the order.
    body.append(commit)
    annotations: dict[str, Any] = annotations_without(
        loop, (LOOP_KIND_KEY, NUM_STAGES_KEY, *PIPELINE_SCHEDULE_KEYS)
    )
    annotations[RING_BUFFERS_KEY] = [str(b.name) for b in rings]
    steady = tirx.For(var, start, extent, tirx.ForKind.SERIAL, _seq(body), annotations=annotations)
    return _seq([*prologue, steady, _extern(copy.wait, int_imm(0))])


def pipeline_loops(body: Any, copy: AsyncCopy | None) -> Any:
    """``body`` with every ``T.Pipelined`` loop made a ring (when ``copy`` is given and
    the loop has a ring copy) or run in order (module docstring)."""
    from tl_ir.launch import num_stages

    rings: dict[Any, Any] = {}

    def rewrite(loop: Any) -> Any:
        annotations = loop.annotations
        if annotations is None or str(annotations.get(LOOP_KIND_KEY, "")) != "pipelined":
            return loop
        stages = num_stages(loop) or 0
        nested = [False]

        def visit(inner: Any) -> None:
            if inner.annotations is not None and RING_BUFFERS_KEY in inner.annotations:
                nested[0] = True

        # Post-order: inner loops are done; an outer loop around a ring runs in order.
        tvm_ffi.structural_walk(loop.body, (tirx.For, visit), order="pre")
        if copy is None or stages < 2 or nested[0]:
            return in_order(loop)
        plan = _plan(loop, stages, body)
        if plan is None:
            return in_order(loop)
        rings.update(plan.rings)
        return build_ring(plan, copy)

    refused: list[NotImplementedError] = []

    def guarded(loop: Any) -> Any:
        # An exception raised inside structural_map reaches us as a RuntimeError.
        if refused:
            return loop
        try:
            return rewrite(loop)
        except NotImplementedError as exc:
            refused.append(exc)
            return loop

    new_body = tvm_ffi.structural_map(body, (tirx.For, guarded), order="post")
    if refused:
        raise refused[0]
    if not rings:
        return new_body

    def allocate(alloc: Any) -> Any:
        for old, new in rings.items():
            if alloc.buffer.same_as(old):
                return tirx.AllocBuffer(new)
        return alloc

    return tvm_ffi.structural_map(new_body, (tirx.AllocBuffer, allocate), order="post")


@dataclass(frozen=True)
class GpuPipelineLoopsPass(PrimFuncPass):
    """``T.Pipelined`` loops as async-copy rings where the target has them, in order
    elsewhere (module docstring).

    Args:
        traits: the backend's traits; their ``async_copy`` (for ``ctx.target``)
            decides.
    """

    name: ClassVar[str] = "gpu-pipeline-loops"
    traits: GpuTraits = field(default=PORTABLE_TRAITS)

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """``body`` with its pipelined loops lowered (module docstring).

        Raises:
            NotImplementedError: a ``T.Pipelined`` schedule the ring cannot express.
        """
        try:
            return pipeline_loops(body, self.traits.async_copy_for(ctx.target))
        except NotImplementedError as exc:
            raise NotImplementedError(f"{self.where(function_name)}: {exc}") from exc
