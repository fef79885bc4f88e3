"""`cpu-stack-block-locals`: keep the block-local arrays of a parallel loop on the thread's stack.

TVM 0.27's ``LowerTVMBuiltin`` turns every CPU allocation of 1024 bytes or
more into a ``TVMBackendAllocWorkspace`` call whose failure branch returns
from the function. Inside an OpenMP ``parallel for`` that return is illegal
(gcc: "invalid branch to/from OpenMP structured block"), and a heap call per
block is slower than a stack array anyway. This pass marks every allocation
inside an outermost parallel loop with ``disable_lower_builtin`` so codegen
emits a plain array, as long as one iteration's arrays stay within
``max_bytes`` (threads have stacks of a few MiB).

The largest such total over the function's parallel loops is recorded as the
function attribute ``STACK_BYTES_ATTR``; the artifact's manifest carries it as
``stack_bytes`` so that tl-runtime can compare it, at load and at call time,
with the stacks of the threads that will run the blocks (docs/cpu.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_backend_api.artifact import STACK_BYTES_ATTR as STACK_BYTES_ATTR
from tl_ir.launch import rebuild_loop
from tl_passes.pass_base import PassContext, PrimFuncPass

#: The AllocBuffer annotation that makes LowerTVMBuiltin leave an allocation alone.
DISABLE_LOWER_BUILTIN = "disable_lower_builtin"


class BlockLocalsTooLargeError(ValueError):
    """The block-local arrays of one parallel iteration exceed the stack budget."""


def _allocation_bytes(alloc: tirx.AllocBuffer) -> int | None:
    buffer = alloc.buffer
    total = tvm.DataType(str(buffer.dtype)).bits // 8 or 1
    for extent in buffer.shape:
        if not isinstance(extent, tirx.IntImm):
            return None
        total *= int(extent)
    return int(total)


def stack_block_locals(stmt: tirx.Stmt, max_bytes: int, where: str) -> tirx.Stmt:
    """Return ``stmt`` with the allocations in its outermost parallel loops annotated.

    Raises:
        BlockLocalsTooLargeError: a parallel loop's body allocates more than
            ``max_bytes`` (or an array of non-constant size).
    """
    return stack_block_locals_with_need(stmt, max_bytes, where)[0]


def stack_block_locals_with_need(
    stmt: tirx.Stmt, max_bytes: int, where: str
) -> tuple[tirx.Stmt, int]:
    """Like `stack_block_locals`, also returning the stack bytes one block needs.

    Returns:
        The annotated statement and the largest total of the arrays one iteration
        of an outermost parallel loop allocates (0 when there are none).

    Raises:
        BlockLocalsTooLargeError: a parallel loop's body allocates more than
            ``max_bytes`` (or an array of non-constant size).
    """

    def annotate(alloc: tirx.AllocBuffer) -> tirx.AllocBuffer:
        annotations = dict(alloc.annotations.items()) if alloc.annotations else {}
        annotations[DISABLE_LOWER_BUILTIN] = tirx.IntImm("bool", 1)
        return tirx.AllocBuffer(alloc.buffer, annotations=annotations)

    # Exceptions raised inside structural_map callbacks come back as RuntimeError,
    # so problems are collected and raised afterwards.
    problems: list[str] = []
    needs: list[int] = [0]

    def rewrite_parallel(loop: tirx.For) -> tirx.For:
        if loop.kind != tirx.ForKind.PARALLEL:
            return loop
        allocations: list[tirx.AllocBuffer] = []
        tvm_ffi.structural_walk(loop.body, (tirx.AllocBuffer, allocations.append), order="post")
        if not allocations:
            return loop
        sizes = [_allocation_bytes(a) for a in allocations]
        if any(size is None for size in sizes):
            problems.append(
                f"{where}: a parallel loop allocates an array of non-constant size; "
                "expected constant-size block-local arrays"
            )
            return loop
        total = sum(size for size in sizes if size is not None)
        if total > max_bytes:
            problems.append(
                f"{where}: the block-local arrays of one parallel iteration take {total} bytes, "
                f"more than the stack budget of {max_bytes} bytes; use smaller tiles"
            )
            return loop
        needs.append(total)
        body = tvm_ffi.structural_map(loop.body, (tirx.AllocBuffer, annotate), order="post")
        return rebuild_loop(loop, body=body)

    # "pre" order: the outermost parallel loop is rewritten first and whole.
    result = tvm_ffi.structural_map(stmt, (tirx.For, rewrite_parallel), order="pre")
    if problems:
        raise BlockLocalsTooLargeError(problems[0])
    return result, max(needs)


@dataclass(frozen=True)
class CpuStackBlockLocalsPass(PrimFuncPass):
    """Keep allocations inside parallel loops on the stack (see the module docstring).

    Args:
        max_bytes: the most bytes one parallel iteration may allocate (default 1 MiB).

    Raises (from ``run``):
        BlockLocalsTooLargeError: a parallel iteration allocates more.
    """

    name: ClassVar[str] = "cpu-stack-block-locals"
    max_bytes: int = 1 << 20

    def transform_function(
        self, func: tirx.PrimFunc, function_name: str, ctx: PassContext
    ) -> tirx.PrimFunc:
        """Return ``func`` with its block-local allocations annotated and its need recorded.

        The function gets ``STACK_BYTES_ATTR`` (the bytes one block's stack arrays
        take) whenever it has stack arrays.
        """
        body, need = stack_block_locals_with_need(
            func.body, self.max_bytes, self.where(function_name)
        )
        if need == 0:
            return func if body.same_as(func.body) else func.with_body(body)
        return func.with_body(body).with_attr(STACK_BYTES_ATTR, tirx.IntImm("int64", need))
