"""`cpu-lower-warp-shuffles`: warp shuffles as exchanges through block memory.

On a GPU a shuffle (``T.shfl_sync``, ``T.shfl_xor``, ``T.shfl_down``,
``T.shfl_up``, and the ``T.warp_reduce_*`` built on them) is a lockstep
exchange among the lanes of a warp. On the CPU a block's threads are loops
split at barriers (`cpu-lower-launch`), so a shuffle is lowered to what those
loops can express: every thread stores the shuffled value into a block-shared
transfer array at its thread index, a barrier, every thread reads the source
lane of its own group into a per-thread local, a barrier (so the next write of
the transfer array waits for every read), and the statement that held the
shuffle reads that local. Nested shuffles are exchanged innermost first.

Two common forms take a cheaper exact path (`warp_lanes`): a butterfly reduction
(``T.warp_reduce_*``, or ``op(x, T.shfl_xor(x, c))`` nested over ``c`` = 1, 2, ...,
s/2) becomes one exchange whose groups are folded by a tree of vector operations,
and a shuffle by a constant the lanes share becomes contiguous copies within each
group. Either way each exchange says which path it took in ``tl.cpu_thread_path``.

Which lane is read (the IR's shuffle intrinsics, the modes of PTX ``shfl.sync``;
``w`` is the group width, ``base`` the thread index with its low ``log2(w)``
bits cleared, ``l`` the lane in the group):

- ``tvm_warp_shuffle(v, src)`` (idx mode; ``shfl_xor`` is built on it):
  ``base + (src & (w - 1))``, always in the group.
- ``tvm_warp_shuffle_down(v, d)``: ``base + l + d`` when ``l + d < w``, else the
  thread's own value.
- ``tvm_warp_shuffle_up(v, d)``: ``base + l - d`` when ``l - d >= 0``, else the
  thread's own value.

A shuffle needs every lane of its group (the language only takes the full
mask); so the block's thread count (``threadIdx.x``; a block with ``y``/``z``
threads is refused) must be a whole number of groups. Under conditions on the
thread index (``if tx < 32:``, the first warp reducing the others' partials)
the barriers are named barriers of the threads the conditions select
(`named_barriers`: region boundaries among those threads), counted when the
kernel is compiled; a selection that splits a group, or a condition on
anything but the thread index, is refused, and so is a shuffle in a loop whose
bounds depend on the thread (by `cpu-lower-launch`, as a barrier there is).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.thread_ir import uses_any
from tl_codegen_cpu.lowering.thread_lanes import THREAD_PATH_KEY
from tl_codegen_cpu.lowering.warp_lanes import (
    FULL_MASK,
    SHUFFLE_MODES,
    WarpReduction,
    guard_groups,
    match_warp_reduction,
    reduction_nest,
    shuffle_mode,
    shuffle_nest,
    uniform_shuffle,
)
from tl_ir.errors import UnsupportedError
from tl_ir.ops import const_int
from tl_ir.scopes import LOCAL, SHARED
from tl_passes.buffer_rewrite import substitute_vars
from tl_passes.pass_base import PassContext, PrimFuncPass


def _shuffles_in(expr: Any) -> list[Any]:
    """The shuffle calls in ``expr``, innermost first (post-order)."""
    found: list[Any] = []

    def visit(call: Any) -> None:
        if shuffle_mode(call) is not None:
            found.append(call)

    tvm_ffi.structural_walk(expr, [(tvm.ir.Call, visit)], order="post")
    return found


def _replace(expr: Any, old: Any, new: Any) -> Any:
    def swap(node: Any) -> Any:
        return new if node.same_as(old) else node

    node_types = (tvm.ir.Call, tirx.Add, tirx.Max, tirx.Min)
    return tvm_ffi.structural_map(expr, [(t, swap) for t in node_types], order="post")


def _warp_reduction_in(expr: Any, thread: Any) -> tuple[Any, WarpReduction] | None:
    """The outermost butterfly reduction in ``expr`` whose value holds no shuffle."""
    found: list[tuple[Any, WarpReduction]] = []

    def visit(node: Any) -> None:
        if found:
            return
        reduction = match_warp_reduction(node, thread)
        if reduction is not None and not _shuffles_in(reduction.value):
            found.append((node, reduction))

    tvm_ffi.structural_walk(expr, [(t, visit) for t in (tirx.Add, tirx.Max, tirx.Min)], order="pre")
    return found[0] if found else None


#: The named barrier id a shuffle under a thread condition waits at (any of 1..15 would
#: do: on the CPU every region boundary waits for the whole block).
SHUFFLE_BARRIER_ID = 15
_PENDING = "tl.cpu_pending_shuffle_barrier"


def _pending_barrier(width: int) -> Any:
    # A barrier whose enclosing thread conditions are collected (as its condition) on
    # the way out of the map; `_Block.place_barriers` turns it into a real one.
    return tirx.AttrStmt(
        tirx.const(width, "int32"), _PENDING, tirx.const(True, "bool"), tirx.Evaluate(0)
    )


@dataclass
class _Block:
    """One block's threads and the buffers its shuffles allocate."""

    thread: Any
    threads: int
    where: str
    allocations: list[Any]
    exchanges: int = 0

    def _check(self, mask: Any, width_arg: Any) -> int:
        """The shuffle's width, after the checks every shuffle needs."""
        # T.shfl_* check their mask; a direct T.tvm_warp_shuffle call does not.
        if const_int(mask) != FULL_MASK:
            raise UnsupportedError(
                f"{self.where}: a warp shuffle with mask {mask} (not a constant full mask) is "
                "not supported on CPU targets; pass 0xFFFFFFFF (every lane takes part) and "
                "select the lanes' results with T.if_then_else"
            )
        width = const_int(width_arg)
        if width is None or width < 1 or width & (width - 1):
            raise UnsupportedError(f"{self.where}: a shuffle width must be a constant power of two")
        if self.threads % width:
            raise UnsupportedError(
                f"{self.where}: a shuffle over groups of {width} lanes needs a block of a whole "
                f"number of groups on CPU targets (every lane takes part), got {self.threads} "
                "threads; launch a multiple of the width or shuffle with a smaller width"
            )
        return width

    def _buffers(self, dtype: str) -> tuple[Any, Any]:
        count = self.exchanges
        self.exchanges += 1
        transfer = tirx.decl_buffer(
            (self.threads,), dtype, name=f"shuffle_transfer_{count}", scope=SHARED
        )
        result = tirx.decl_buffer((self.threads,), dtype, name=f"shuffle_out_{count}", scope=SHARED)
        return transfer, result

    def reduce(self, reduction: WarpReduction, dtype: str) -> tuple[list[Any], Any]:
        """Statements that reduce each group in vector lanes (`warp_lanes`), and the load
        of each thread's result."""
        transfer, _ = self._buffers(dtype)
        self.allocations.append(tirx.AllocBuffer(transfer))
        tx = self.thread
        order = "" if reduction.in_gpu_order else " (reassociated: offsets not descending)"
        path = (
            f"lanes: warp reduction ({reduction.kind}) over groups of {reduction.group} lanes "
            f"through {transfer.name}: one vector tree per group{order}"
        )
        barrier = _pending_barrier(reduction.width)
        statements = [
            tirx.BufferStore(transfer, reduction.value, [tx]),
            barrier,
            reduction_nest(reduction, transfer, self.threads, path),
            barrier,
        ]
        return statements, tirx.BufferLoad(transfer, [tx])

    def exchange(self, call: Any) -> tuple[list[Any], Any]:
        """Statements that perform the shuffle ``call`` and the load of its result."""
        mode = SHUFFLE_MODES[str(call.op.name)]
        mask, value, operand, width_arg, _warp = call.args
        width = self._check(mask, width_arg)
        dtype = str(call.ty.dtype)
        tx = self.thread
        uniform = uniform_shuffle(call, tx)
        if uniform is not None:
            transfer, out = self._buffers(dtype)
            self.allocations += [tirx.AllocBuffer(transfer), tirx.AllocBuffer(out)]
            form, constant = uniform
            path = (
                f"lanes: shuffle ({form} {constant}) of {width}-lane groups through "
                f"{transfer.name}: contiguous copies per group"
            )
            barrier = _pending_barrier(width)
            nest = shuffle_nest(form, constant, width, transfer, out, self.threads, path)
            statements = [tirx.BufferStore(transfer, value, [tx]), barrier, nest, barrier]
            return statements, tirx.BufferLoad(out, [tx])
        transfer, _ = self._buffers(dtype)
        result = tirx.decl_buffer(
            (1,), dtype, name=f"shuffle_result_{self.exchanges - 1}", scope=LOCAL
        )
        self.allocations += [tirx.AllocBuffer(transfer), tirx.AllocBuffer(result)]
        index_dtype = tx.ty.dtype
        base = tirx.bitwise_and(tx, tirx.const(~(width - 1), index_dtype))
        lane = tirx.bitwise_and(tx, tirx.const(width - 1, index_dtype))
        delta = tirx.Cast(index_dtype, operand) if operand.ty.dtype != index_dtype else operand
        own = tirx.BufferLoad(transfer, [tx])
        if mode == "idx":
            read = tirx.BufferLoad(
                transfer, [base + tirx.bitwise_and(delta, tirx.const(width - 1, index_dtype))]
            )
        else:
            source = lane + delta if mode == "down" else lane - delta
            in_group = tirx.And(source >= 0, source < width)
            # The clamp keeps the unread arm's address in bounds (Select evaluates both).
            clamped = tirx.max(tirx.min(source, width - 1), 0)
            read = tirx.Select(in_group, tirx.BufferLoad(transfer, [base + clamped]), own)
        barrier = _pending_barrier(width)
        why = (
            f"scalar: shuffle ({mode}) through {transfer.name}: the source lane is not a "
            "constant the lanes share"
        )
        statements = [
            tirx.BufferStore(transfer, value, [tx]),
            barrier,
            tirx.AttrStmt(
                tirx.const(0, "int32"),
                THREAD_PATH_KEY,
                tvm.ir.StringImm(why),
                tirx.BufferStore(result, read, [0]),
            ),
            barrier,
        ]
        return statements, tirx.BufferLoad(result, [0])

    def lower_statement(self, expr: Any, rebuild: Any) -> Any:
        """``rebuild(expr')`` preceded by the exchanges of ``expr``'s shuffles, where
        ``expr'`` reads their results."""
        statements: list[Any] = []
        while True:
            shuffles = _shuffles_in(expr)
            if not shuffles:
                break
            reduction = _warp_reduction_in(expr, self.thread)
            if reduction is not None:
                node, matched = reduction
                self._check(FULL_MASK, tirx.const(matched.width, "int32"))
                exchange, result = self.reduce(matched, str(node.ty.dtype))
                statements += exchange
                expr = _replace(expr, node, result)
                continue
            innermost = shuffles[0]
            exchange, result = self.exchange(innermost)
            statements += exchange
            expr = _replace(expr, innermost, result)
        return tirx.SeqStmt([*statements, rebuild(expr)])

    def guard(self, branch: Any) -> Any:
        """``branch`` (an ``IfThenElse``) with the condition it puts on the thread (when it
        has one) added to the pending barriers under it."""
        condition = branch.condition
        if not uses_any(condition, {self.thread}):
            return branch

        def under(stmt: Any, holds: Any) -> Any:
            def add(attr: Any) -> Any:
                if attr.attr_key != _PENDING:
                    return attr
                return tirx.AttrStmt(attr.node, _PENDING, tirx.And(holds, attr.value), attr.body)

            return tvm_ffi.structural_map(stmt, [(tirx.AttrStmt, add)], order="post")

        then_case = guard_groups(under(branch.then_case, condition), self.thread, condition)
        else_case = None
        if branch.else_case is not None:
            negated = tirx.Not(condition)
            else_case = guard_groups(under(branch.else_case, negated), self.thread, negated)
        return tirx.IfThenElse(condition, then_case, else_case)

    def barrier_for(self, width: int, condition: Any) -> Any:
        """The block barrier (no condition) or the named barrier of the threads for which
        ``condition`` holds, refused unless those are whole groups of ``width`` lanes."""
        analyzer = tvm.sym.Analyzer()
        holds: list[bool] = []
        for thread in range(self.threads):
            mapping = {self.thread: tirx.const(thread, self.thread.ty.dtype)}
            value = const_int(
                analyzer.simplify(substitute_vars(tirx.Evaluate(condition), mapping).value)
            )
            if value is None:
                raise UnsupportedError(
                    f"{self.where}: a warp shuffle under a condition that is not on the "
                    f"thread index alone ({condition}) is not supported on CPU targets; "
                    "shuffle unconditionally and use the result under the condition"
                )
            holds.append(bool(value))
        groups = [holds[i : i + width] for i in range(0, self.threads, width)]
        if any(any(group) and not all(group) for group in groups):
            raise UnsupportedError(
                f"{self.where}: a warp shuffle under {condition} is reached by part of a "
                f"{width}-lane group; every lane of the group must take part (the full mask)"
            )
        reached = sum(holds)
        if reached == self.threads:
            return tirx.Evaluate(
                tirx.call_intrin("int32", "tirx.tvm_storage_sync", tvm.ir.StringImm(SHARED))
            )
        return tirx.Evaluate(
            tirx.call_intrin(
                "int32",
                "tirx.tvm_storage_sync",
                tvm.ir.StringImm(SHARED),
                tirx.const(SHUFFLE_BARRIER_ID, "int32"),
                tirx.const(reached, "int32"),
            )
        )

    def place_barriers(self, body: Any) -> Any:
        """``body`` with every pending barrier made a real one (`barrier_for`)."""
        refusals: list[UnsupportedError] = []

        def place(attr: Any) -> Any:
            if attr.attr_key != _PENDING or refusals:
                return attr
            try:
                return self.barrier_for(int(attr.node.value), attr.value)
            except UnsupportedError as refusal:
                refusals.append(refusal)
                return attr

        placed = tvm_ffi.structural_map(body, [(tirx.AttrStmt, place)], order="post")
        if refusals:
            raise refusals[0]
        return placed


def _lower_block(attr: Any, where: str) -> Any:
    threads = const_int(attr.value)
    if threads is None:
        raise UnsupportedError(f"{where}: warp shuffles on CPU targets need a constant block size")
    block = _Block(attr.node.var, threads, where, [])
    # An exception raised inside a structural_map callback reaches the caller as a
    # RuntimeError; the refusal is kept and raised again once the map returns.
    refusals: list[UnsupportedError] = []

    def lowered(node: Any, rebuild: Any) -> Any:
        if refusals or not _shuffles_in(node.value):
            return node
        try:
            return block.lower_statement(node.value, rebuild)
        except UnsupportedError as refusal:
            refusals.append(refusal)
            return node

    def store(node: Any) -> Any:
        buffer, indices = node.buffer, list(node.indices)
        return lowered(node, lambda e: tirx.BufferStore(buffer, e, indices))

    def evaluate(node: Any) -> Any:
        return lowered(node, tirx.Evaluate)

    body = tvm_ffi.structural_map(
        attr.body,
        [(tirx.BufferStore, store), (tirx.Evaluate, evaluate), (tirx.IfThenElse, block.guard)],
        order="post",
    )
    if refusals:
        raise refusals[0]
    body = block.place_barriers(body)
    if _shuffles_in(body):
        raise UnsupportedError(
            f"{where}: a warp shuffle in a loop bound, condition or let binding is not "
            "supported on CPU targets; assign the shuffled value to a T.alloc_var first"
        )
    if block.allocations:
        body = tirx.SeqStmt([*block.allocations, body])
    return tirx.AttrStmt(attr.node, attr.attr_key, attr.value, body)


@dataclass(frozen=True)
class CpuLowerWarpShufflesPass(PrimFuncPass):
    """Lower warp shuffles to exchanges through block memory (module docstring)."""

    name: ClassVar[str] = "cpu-lower-warp-shuffles"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """``body`` with every shuffle lowered.

        Raises:
            UnsupportedError: a shuffle in a block with ``threadIdx.y``/``z`` threads, a
                non-constant block size, a block not a whole number of groups, or a
                shuffle outside a plain statement's value.
        """
        if not _shuffles_in(body):
            return body
        where = self.where(function_name)
        tags: dict[str, Any] = {}
        blocks: list[Any] = []

        def note(attr: Any) -> None:
            if attr.attr_key == "thread_extent":
                tag = str(attr.node.thread_tag)
                tags[tag] = attr
                if tag == "threadIdx.x":
                    blocks.append(attr)

        tvm_ffi.structural_walk(body, [(tirx.AttrStmt, note)], order="pre")
        for tag in ("threadIdx.y", "threadIdx.z"):
            if tag in tags and const_int(tags[tag].value) != 1:
                raise UnsupportedError(
                    f"{where}: warp shuffles on CPU targets need a 1-D thread block "
                    f"(threads=N), got {tag} threads; linearize the thread index"
                )
        if not blocks:
            raise UnsupportedError(f"{where}: a warp shuffle outside a block's threads")
        # Lowered here, not inside the map below: its refusals must reach the caller.
        lowered = [(attr, _lower_block(attr, where)) for attr in blocks]

        def lower(attr: Any) -> Any:
            for old, new in lowered:
                if old.same_as(attr):
                    return new
            return attr

        return tvm_ffi.structural_map(body, [(tirx.AttrStmt, lower)], order="post")
