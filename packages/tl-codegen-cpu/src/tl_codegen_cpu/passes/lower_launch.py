"""`cpu-lower-launch`: the ``T.Kernel`` grid becomes one parallel loop; threads become loops.

``T.Kernel(gx, gy, gz, threads=...)`` is a chain of ``thread_extent``
attributes on ``blockIdx.x/y/z`` and ``threadIdx.x/y/z``. On the CPU:

* the grid becomes **one** ``parallel`` loop over all ``gx * gy * gz`` blocks
  (``bx`` varies fastest: ``bx = b % gx``, ``by = (b // gx) % gy``,
  ``bz = b // (gx * gy)``); the C toolchain turns it into
  ``#pragma omp parallel for``, LLVM into TVM's parallel launch. A block runs
  on one core.
* the threads of a block do not exist at run time when the kernel never
  names them: tile ops and ``T.Parallel`` loops already describe the whole
  block's work (they become loops and vector lanes).
* when the body uses a thread index (``T.get_thread_binding``, or the
  ``threadIdx`` Var), the block body runs inside serial loops over the
  block's threads (``threadIdx.x`` innermost). Such kernels may not contain
  tile ops (a tile op is the whole block's work, not one thread's) and have
  no barriers on the CPU; the pass raises `tl_ir.errors.UnsupportedError`
  for tile ops there. Shared-tile allocations at the top of the block stay
  outside the thread loops (one per block).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir.errors import UnsupportedError
from tl_ir.ops import is_tile_op
from tl_passes.buffer_rewrite import substitute_vars
from tl_passes.pass_base import PassContext, PrimFuncPass

_BLOCK_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
_THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
_SHARED_SCOPES = ("shared", "shared.dyn")


def _uses_any(stmt: tirx.Stmt, variables: list[Any]) -> bool:
    found = False

    def visit(var: Any) -> None:
        nonlocal found
        if any(var.same_as(v) for v in variables):
            found = True

    tvm_ffi.structural_walk(stmt, (tvm.ir.Var, visit), order="post")
    return found


def _has_tile_op(stmt: tirx.Stmt) -> bool:
    found = False

    def visit(call: Any) -> None:
        nonlocal found
        if is_tile_op(call):
            found = True

    tvm_ffi.structural_walk(stmt, (tvm.ir.Call, visit), order="post")
    return found


def _seq(stmts: list[tirx.Stmt]) -> tirx.Stmt:
    return stmts[0] if len(stmts) == 1 else tirx.SeqStmt(stmts)


def _thread_loops(body: tirx.Stmt, threads: list[tuple[Any, Any]]) -> tirx.Stmt:
    items = list(body.seq) if isinstance(body, tirx.SeqStmt) else [body]
    hoisted: list[tirx.Stmt] = []
    while (
        items
        and isinstance(items[0], tirx.AllocBuffer)
        and str(items[0].buffer.ty.storage_scope) in _SHARED_SCOPES
    ):
        hoisted.append(items.pop(0))
    inner = _seq(items) if items else tirx.Evaluate(tirx.const(0, "int32"))
    # threadIdx.x is the innermost loop (consecutive threads touch consecutive data).
    for var, extent in threads:
        inner = tirx.For(var, 0, extent, tirx.ForKind.SERIAL, inner)
    return _seq([*hoisted, inner])


def _grid_loop(body: tirx.Stmt, blocks: list[tuple[Any, Any]]) -> tirx.Stmt:
    if len(blocks) == 1:
        var, extent = blocks[0]
        return tirx.For(var, 0, extent, tirx.ForKind.PARALLEL, body)
    block = tirx.Var("block_id", "int32")
    mapping: dict[Any, Any] = {}
    stride: Any = tirx.const(1, "int32")
    for position, (var, extent) in enumerate(blocks):
        index = block if position == 0 else tirx.floordiv(block, stride)
        mapping[var] = index if position == len(blocks) - 1 else tirx.floormod(index, extent)
        stride = stride * extent
    return tirx.For(block, 0, stride, tirx.ForKind.PARALLEL, substitute_vars(body, mapping))


def lower_launch(stmt: tirx.Stmt, where: str) -> tirx.Stmt:
    """Return ``stmt`` with every ``T.Kernel`` launch lowered as the module docstring says.

    Raises:
        UnsupportedError: a kernel that uses its thread index also contains tile ops.
    """
    problems: list[str] = []

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
        if threads and _uses_any(body, [v for v, _ in threads]):
            if _has_tile_op(body):
                problems.append(
                    f"{where}: on CPU targets a kernel that uses its thread index "
                    "(T.get_thread_binding / threadIdx) cannot also contain tile ops "
                    "(T.copy, T.gemm, T.reduce...): a tile op is the whole block's work. "
                    "Write the per-thread part with T.Parallel loops instead."
                )
                return attr
            body = _thread_loops(body, threads)
        if not blocks:
            return body
        return _grid_loop(body, blocks)

    result = tvm_ffi.structural_map(stmt, (tirx.AttrStmt, rewrite), order="pre")
    if problems:
        raise UnsupportedError(problems[0])
    return result


@dataclass(frozen=True)
class CpuLowerLaunchPass(PrimFuncPass):
    """Lower ``T.Kernel`` launches for the CPU (see the module docstring).

    Raises (from ``run``):
        UnsupportedError: thread-index code mixed with tile ops.
    """

    name: ClassVar[str] = "cpu-lower-launch"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its launch lowered."""
        return lower_launch(body, self.where(function_name))
