"""`cpu-lower-launch`: each ``T.Kernel`` grid becomes a parallel loop; threads become loops.

``T.Kernel(gx, gy, gz, threads=...)`` is a chain of ``thread_extent``
attributes on ``blockIdx.x/y/z`` and ``threadIdx.x/y/z``. On the CPU:

* the grid becomes **one** ``parallel`` loop over all ``gx * gy * gz`` blocks
  (``bx`` varies fastest: ``bx = b % gx``, ``by = (b // gx) % gy``,
  ``bz = b // (gx * gy)``); the C toolchain turns it into
  ``#pragma omp parallel for``, LLVM into TVM's parallel launch. A block runs
  on one core.
* the threads of a block do not exist at run time when the kernel never
  names them: tile ops and ``T.Parallel`` loops already describe the whole
  block's work (they become loops and vector lanes), and ``T.sync_threads``
  is a no-op.
* a ``T.thread_binding(n, thread=tag)`` loop is the kernel's thread index of
  that tag (its body runs once per thread, under ``tx < n`` when ``n`` is not
  the block's extent);
* when the body uses a thread index (``T.get_thread_binding``,
  ``T.thread_binding``, or the ``threadIdx`` Var), the block runs as loops over its threads
  (``threadIdx.x`` innermost), split into regions at barriers: explicit
  ``T.sync_threads``, the operations the threads do together (tile ops on
  shared operands, ``T.Parallel`` loops over shared data, thread
  reductions), and conflicting shared-memory accesses of different threads.
  `thread_regions` says how; thread-local values that cross a region
  boundary become per-thread arrays (`per_thread_locals`). Each region's
  nest then becomes SIMD lanes where proven (`thread_lanes`: per-thread sums
  as partial vectors; `thread_lockstep`: the threads in lock step, the thread
  index contiguous in memory as the lanes), and says which path it took in
  its ``tl.cpu_thread_path`` annotation;
* a launch whose global atomics no two threads can race on when some grid
  axes run serially (`atomic_ownership` proves it from the atomics' indices)
  gets those colliding axes as serial loops inside the parallel loop, and its
  atomics become plain read-modify-writes;
* several ``T.Kernel`` blocks in one prim_func run one after the other: each
  becomes its own parallel grid loop, and a parallel loop ends only when all
  its blocks have finished (OpenMP's implicit barrier; TVM's parallel launch
  returns when its workers are done), so each launch sees everything the one
  before it wrote.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.atomic_ownership import (
    AtomicOwnership,
    plan_atomic_ownership,
    privatize_atomics,
)
from tl_codegen_cpu.lowering.fetching_atomics import (
    FETCHING_ATOMIC_PATH,
    holds_fetching_atomic,
    mark_fetching_atomic,
    strip_fetching_markers,
)
from tl_codegen_cpu.lowering.per_thread_locals import expand_per_thread_locals, is_thread_nest
from tl_codegen_cpu.lowering.replicated_fragments import privatize_per_thread_fragments
from tl_codegen_cpu.lowering.thread_accumulations import lane_shared_accumulations
from tl_codegen_cpu.lowering.thread_allreduce import ALLREDUCE_KEY, lane_thread_allreduce
from tl_codegen_cpu.lowering.thread_copy_interchange import interchange_copy_loop
from tl_codegen_cpu.lowering.thread_forwarding import MERGED_KEY, merge_across_barriers
from tl_codegen_cpu.lowering.thread_ir import (
    THREAD_NEST_KEY,
    ThreadSpace,
    has_block_level_element_atomic,
    is_block_barrier,
    thread_dependent_values,
    uses_any,
)
from tl_codegen_cpu.lowering.thread_jam import jam_threads
from tl_codegen_cpu.lowering.thread_lanes import (
    THREAD_PATH_KEY,
    LaneReport,
    lane_thread_reductions,
)
from tl_codegen_cpu.lowering.thread_lockstep import lockstep_nest
from tl_codegen_cpu.lowering.thread_ranges import cut_thread_loops
from tl_codegen_cpu.lowering.thread_regions import RegionSplitter
from tl_codegen_cpu.lowering.vector_isa import VectorISA, vector_isa_for_target
from tl_codegen_cpu.passes.lower_tile_ops import lower_tile_op
from tl_ir.errors import UnsupportedError
from tl_ir.launch import rebuild_loop
from tl_ir.ops import describe
from tl_passes.buffer_rewrite import substitute_vars
from tl_passes.pass_base import PassContext, PrimFuncPass
from tl_passes.thread_loops import bind_thread_loops

_BLOCK_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
_THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")


def _lane_nests(stmt: tirx.Stmt, space: ThreadSpace, isa: VectorISA) -> tirx.Stmt:
    """Each region's nest with its per-thread reductions as vector lanes where proven
    (`thread_lanes`) and its threads in lock step where a thread index is contiguous in
    memory (`thread_lockstep`); its marker replaced by `THREAD_PATH_KEY`: the path taken."""
    variables = space.variables

    def lane(loop: Any) -> Any:
        reduction_path = None
        if is_thread_nest(loop) and ALLREDUCE_KEY in loop.annotations:
            laned_reduction, reduction_path = lane_thread_allreduce(loop, isa)
            if laned_reduction is not None:
                return laned_reduction
            kept = {k: v for k, v in loop.annotations.items() if k != ALLREDUCE_KEY}
            loop = rebuild_loop(loop, annotations=kept)
        if is_thread_nest(loop) and holds_fetching_atomic(loop):
            kept = {
                k: v for k, v in loop.annotations.items() if k not in (THREAD_NEST_KEY, MERGED_KEY)
            }
            kept[THREAD_PATH_KEY] = FETCHING_ATOMIC_PATH
            return rebuild_loop(loop, body=strip_fetching_markers(loop.body), annotations=kept)
        if not is_thread_nest(loop):
            swapped = interchange_copy_loop(loop, set(variables))
            if swapped is None:
                return loop
            path = str(swapped.annotations[THREAD_PATH_KEY])
            kept = {k: v for k, v in swapped.annotations.items() if k != THREAD_PATH_KEY}
            kept[THREAD_PATH_KEY] = f"{path}; the loop over {loop.loop_var.name} moved inside"
            return rebuild_loop(swapped, annotations=kept)
        before, loop, after = lane_shared_accumulations(loop, isa)
        laned_nest = _lane_nest(loop, reduction_path)
        return _seq([*before, laned_nest, *after]) if after else laned_nest

    def _lane_nest(loop: Any, reduction_path: str | None) -> Any:
        # In lock step each thread's fold is one store, a loop over the lanes vectorizes
        # (strided loads); alone, the fold is a tree of vector adds.
        laned, report = lane_thread_reductions(loop.body, isa, variables, fold="expression")
        nest = rebuild_loop(loop, body=laned, annotations=None)
        thread_loops, body = _thread_loops(nest, variables)
        stepped, how = lockstep_nest(body, thread_loops, isa) if thread_loops else (None, "")
        if stepped is None and report.vectorized:
            # Step 1 took every thread's own loop as the lanes (strided across K when the
            # threads interleave: A[k * 128 + tx]); the threads themselves may still be
            # contiguous lanes inside that loop, each thread's sum then in its own order.
            plain = rebuild_loop(loop, annotations=None)
            plain_loops, plain_body = _thread_loops(plain, variables)
            stepped, how = lockstep_nest(plain_body, plain_loops, isa)
            if stepped is not None:
                report = LaneReport()
        if stepped is None and report.vectorized:
            laned, report = lane_thread_reductions(loop.body, isa, variables)
            nest = rebuild_loop(loop, body=laned, annotations=None)
        path = report.describe() if reduction_path is None else reduction_path
        merged = loop.annotations.get(MERGED_KEY) if loop.annotations else None
        if merged is not None:
            merged = str(merged.value) if isinstance(merged, tvm.ir.StringImm) else str(merged)
        if stepped is not None:
            nest = stepped
            path = (
                f"lanes: {how}; {path}" if report.vectorized or report.refused else f"lanes: {how}"
            )
        if merged is not None:
            kind, _, rest = path.partition(": ")
            path = f"{kind}: {merged}; {rest}"
        nest, jammed = _jam_innermost_thread_loop(nest, variables, isa)
        if jammed > 1:
            path += f"; {jammed} threads interleaved"
        nest, cuts = cut_thread_loops(nest, variables)
        if cuts:
            path += f"; threads {', '.join(cuts)}"
        if not isinstance(nest, tirx.For):  # the only thread loop became the lanes
            return tirx.AttrStmt(
                tirx.const(0, "int32"), THREAD_PATH_KEY, tvm.ir.StringImm(path), nest
            )
        kept = {k: v for k, v in loop.annotations.items() if k not in (THREAD_NEST_KEY, MERGED_KEY)}
        kept[THREAD_PATH_KEY] = path
        return rebuild_loop(nest, annotations=kept)

    laned = tvm_ffi.structural_map(stmt, (tirx.For, lane), order="post")
    return strip_fetching_markers(laned)


def _seq(stmts: list[Any]) -> Any:
    return stmts[0] if len(stmts) == 1 else tirx.SeqStmt(stmts)


def _thread_loops(nest: Any, variables: tuple[Any, ...]) -> tuple[list[tuple[Any, int]], Any]:
    """The thread loops at the top of ``nest`` (constant extents from 0, outermost
    first) and the body inside them."""
    thread_loops: list[tuple[Any, int]] = []
    body: Any = nest
    while isinstance(body, tirx.For) and any(body.loop_var.same_as(v) for v in variables):
        if not isinstance(body.extent, tirx.IntImm) or not is_zero(body.min):
            break
        thread_loops.append((body.loop_var, int(body.extent.value)))
        body = body.body
    return thread_loops, body


def _jam_innermost_thread_loop(
    nest: Any, variables: tuple[Any, ...], isa: VectorISA
) -> tuple[Any, int]:
    """``nest`` with the innermost of its top thread loops jammed (`thread_jam`)."""
    if not isinstance(nest, tirx.For) or not any(nest.loop_var.same_as(v) for v in variables):
        return nest, 1
    inner = nest.body
    if isinstance(inner, tirx.For) and any(inner.loop_var.same_as(v) for v in variables):
        rebuilt, factor = _jam_innermost_thread_loop(inner, variables, isa)
        return rebuild_loop(nest, body=rebuilt), factor
    return jam_threads(nest, isa)


def _drop_barriers(stmt: tirx.Stmt) -> tirx.Stmt:
    # Without thread loops a block is one sequential run: a barrier orders nothing.
    def drop(evaluate: Any) -> Any:
        return tirx.Evaluate(tirx.const(0, "int32")) if is_block_barrier(evaluate) else evaluate

    return tvm_ffi.structural_map(stmt, (tirx.Evaluate, drop), order="post")


def is_zero(value: Any) -> bool:
    return isinstance(value, tirx.IntImm) and int(value.value) == 0


def run_threads(
    body: tirx.Stmt,
    threads: list[tuple[Any, Any]],
    lower_thread_op: Callable[[Any], tirx.Stmt],
    where: str,
    isa: VectorISA,
) -> tirx.Stmt:
    """A block body that names its thread index, as loops over the threads split at
    barriers (see `thread_regions`), with cross-region locals per thread and per-thread
    reductions as ``isa``'s vector lanes (`thread_lanes`).

    Raises:
        UnsupportedError: a barrier or cooperative op the CPU cannot place (see
            `thread_regions`).
    """
    body = privatize_per_thread_fragments(body)
    space = ThreadSpace(tuple(v for v, _ in threads), tuple(e for _, e in threads))
    dependent = thread_dependent_values(body, list(space.variables))
    splitter = RegionSplitter(space, dependent, lower_thread_op, where)
    lowered = splitter.lower_block(body)
    lowered = expand_per_thread_locals(lowered, space, where)
    lowered = merge_across_barriers(lowered, space.variables)
    return _lane_nests(lowered, space, isa)


def _grid_loop(
    body: tirx.Stmt, blocks: list[tuple[Any, Any]], ownership: AtomicOwnership | None = None
) -> tirx.Stmt:
    if ownership is not None:
        # The plan's serial axes (colliding ones; in band order some owned ones too)
        # run inside each parallel iteration; the parallel loop covers the others.
        for var, extent in ownership.serial_blocks:
            body = tirx.For(var, 0, extent, tirx.ForKind.SERIAL, body)
        blocks = list(ownership.parallel_blocks)
    if len(blocks) == 1:
        var, extent = blocks[0]
        return tirx.For(var, 0, extent, tirx.ForKind.PARALLEL, body)
    # A run-time extent (``T.ceildiv(max_seqlen, 64)``) is named once before the loop:
    # substituted into every use of the block indices, its expression was repeated in
    # each index and guard, and the later integer passes multiplied it (a varlen flash
    # attention's IR grew fivefold and took most of a minute to build).
    extent_names: list[tuple[Any, Any]] = []
    named_blocks: list[tuple[Any, Any]] = []
    for var, extent in blocks:
        if not isinstance(extent, tirx.IntImm):
            name = tirx.Var(f"{var.name}_extent", extent.ty.dtype)
            extent_names.append((name, extent))
            extent = name
        named_blocks.append((var, extent))
    block = tirx.Var("block_id", "int32")
    mapping: dict[Any, Any] = {}
    stride: Any = tirx.const(1, "int32")
    for position, (var, extent) in enumerate(named_blocks):
        index = block if position == 0 else tirx.floordiv(block, stride)
        mapping[var] = index if position == len(named_blocks) - 1 else tirx.floormod(index, extent)
        stride = stride * extent
    loop = tirx.For(block, 0, stride, tirx.ForKind.PARALLEL, substitute_vars(body, mapping))
    if not extent_names:
        return loop
    return tirx.SeqStmt([*(tirx.Bind(name, extent) for name, extent in extent_names), loop])


def lower_launch(
    stmt: tirx.Stmt,
    where: str,
    lower_thread_op: Callable[[Any], tirx.Stmt],
    min_owned_blocks: int,
    isa: VectorISA,
) -> tirx.Stmt:
    """Return ``stmt`` with every ``T.Kernel`` launch lowered as the module docstring says.

    ``lower_thread_op`` lowers one tile-op call that a single thread runs (an operand
    in thread-local memory) to its loops. ``min_owned_blocks``: the fewest parallel
    blocks a launch may keep when its colliding grid axes become serial
    (`atomic_ownership.plan_atomic_ownership`). ``isa``: the vector registers
    per-thread reductions are laned for (`thread_lanes`).

    Raises:
        UnsupportedError: thread-index code the CPU cannot split at its barriers.
    """
    problems: list[UnsupportedError] = []

    def rewrite(attr: tirx.AttrStmt) -> tirx.Stmt:
        if attr.attr_key != "thread_extent":
            return attr
        found: dict[str, tuple[Any, Any]] = {}
        body: tirx.Stmt = attr
        while isinstance(body, tirx.AttrStmt) and body.attr_key == "thread_extent":
            found[str(body.node.thread_tag)] = (body.node.var, body.value)
            body = body.body
        blocks = [found[t] for t in _BLOCK_TAGS if t in found]
        threads = [found[t] for t in _THREAD_TAGS if t in found]
        try:
            body = bind_thread_loops(body, found, where)
        except UnsupportedError as error:
            problems.append(error)
            return attr
        # A scalar atomic outside T.Parallel runs on every thread (TileLang's element
        # atomic), so such a block runs its threads even when it never names them.
        thread_atomics = has_block_level_element_atomic(body)
        ownership = plan_atomic_ownership(body, blocks, threads, min_owned_blocks)
        if ownership is not None:
            body = privatize_atomics(body, ownership)
        if threads and (thread_atomics or uses_any(body, {v for v, _ in threads})):
            try:
                body = run_threads(body, threads, lower_thread_op, where, isa)
            except UnsupportedError as error:
                problems.append(error)
                return attr
        else:
            body = _drop_barriers(body)
        if not blocks:
            return body
        return _grid_loop(body, blocks, ownership)

    # Exceptions raised inside structural_map callbacks come back as RuntimeError,
    # so they are collected and re-raised here.
    result = tvm_ffi.structural_map(stmt, (tirx.AttrStmt, rewrite), order="pre")
    if problems:
        raise problems[0]
    return result


@dataclass(frozen=True)
class CpuLowerLaunchPass(PrimFuncPass):
    """Lower ``T.Kernel`` launches for the CPU (see the module docstring).

    Args:
        min_owned_blocks: the fewest parallel blocks a launch keeps when its
            colliding grid axes become serial to drop its atomics; None: the host's
            core count, so that no core idles that the atomic grid would keep busy.

    Raises:
        ValueError (on construction): ``min_owned_blocks`` is not a positive int.
        UnsupportedError (from ``run``): thread-index code with a barrier the CPU
            cannot place.
    """

    name: ClassVar[str] = "cpu-lower-launch"
    min_owned_blocks: int | None = None

    def __post_init__(self) -> None:
        value = self.min_owned_blocks
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or value < 1
        ):
            raise ValueError(
                f"cpu-lower-launch min_owned_blocks: expected a positive int or None, got {value!r}"
            )

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its launches lowered."""
        isa = vector_isa_for_target(ctx.target)

        def lower_thread_op(call: Any) -> tirx.Stmt:
            op = describe(call)
            return mark_fetching_atomic(op, lower_tile_op(op, isa=isa, gemm_style="tir"))

        min_owned = self.min_owned_blocks or os.cpu_count() or 1
        return lower_launch(body, self.where(function_name), lower_thread_op, min_owned, isa)
