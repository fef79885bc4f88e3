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
from tl_ir.errors import UnsupportedError
from tl_ir.ops import const_int
from tl_ir.scopes import LOCAL, SHARED
from tl_passes.buffer_rewrite import substitute_vars
from tl_passes.pass_base import PassContext, PrimFuncPass

#: The IR's shuffle intrinsics -> the mode of PTX ``shfl.sync`` they are.
SHUFFLE_MODES: dict[str, str] = {
    "tirx.tvm_warp_shuffle": "idx",
    "tirx.tvm_warp_shuffle_down": "down",
    "tirx.tvm_warp_shuffle_up": "up",
}


def _shuffle_mode(node: Any) -> str | None:
    if isinstance(node, tvm.ir.Call) and isinstance(node.op, tvm.ir.Op):
        return SHUFFLE_MODES.get(str(node.op.name))
    return None


def _shuffles_in(expr: Any) -> list[Any]:
    """The shuffle calls in ``expr``, innermost first (post-order)."""
    found: list[Any] = []

    def visit(call: Any) -> None:
        if _shuffle_mode(call) is not None:
            found.append(call)

    tvm_ffi.structural_walk(expr, [(tvm.ir.Call, visit)], order="post")
    return found


def _replace(expr: Any, old: Any, new: Any) -> Any:
    def swap(call: Any) -> Any:
        return new if call.same_as(old) else call

    return tvm_ffi.structural_map(expr, [(tvm.ir.Call, swap)], order="post")


#: The lane mask of a whole warp, the only one the CPU lowering accepts.
FULL_MASK = (1 << 32) - 1

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

    def exchange(self, call: Any) -> tuple[list[Any], Any]:
        """Statements that perform the shuffle ``call`` and the load of its result."""
        mode = SHUFFLE_MODES[str(call.op.name)]
        mask, value, operand, width_arg, _warp = call.args
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
        dtype = str(call.ty.dtype)
        count = len(self.allocations) // 2
        transfer = tirx.decl_buffer(
            (self.threads,), dtype, name=f"shuffle_transfer_{count}", scope=SHARED
        )
        result = tirx.decl_buffer((1,), dtype, name=f"shuffle_result_{count}", scope=LOCAL)
        self.allocations += [tirx.AllocBuffer(transfer), tirx.AllocBuffer(result)]
        tx = self.thread
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
        statements = [
            tirx.BufferStore(transfer, value, [tx]),
            barrier,
            tirx.BufferStore(result, read, [0]),
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

        then_case = under(branch.then_case, condition)
        else_case = None
        if branch.else_case is not None:
            else_case = under(branch.else_case, tirx.Not(condition))
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
