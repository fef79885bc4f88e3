"""`cpu-lower-parallel-loops`: ``T.Parallel`` loops become vectorizable loops over the tile.

A block runs on one core, so the element-parallel loops of ``T.Parallel``
become ordinary loops; the innermost one is marked ``vectorized`` (its
iterations become vector lanes) when its extent is a constant of at most
``max_vector_extent`` and its body is straight-line stores (no nested loop,
no branch statement, no extern or packed call). Every other ``T.Parallel`` loop
becomes ``serial``. The ``tl.loop_kind`` annotations are removed.

An ``if_then_else`` expression (``T.if_then_else``, and the guards of padded or
masked element-wise code) does not stop vectorization: TVM's vectorizer turns it
into a lane-wise select, and gcc/LLVM emit blend instructions, which beats a
scalar loop with a branch per element. (Until this was made explicit, the check
spelt the op ``tirx.if_then_else`` while TVM 0.27 registers ``prim.if_then_else``,
so it never fired; the corpus's generated code is that of the select path.)

A loop that stores an element it also reads stays vectorized only when each
iteration stores its own element (an index linear in the loop variable with a
non-zero constant coefficient). An update of one element across the iterations,
``s[0] = s[0] + A[i]`` (a legacy ``T.alloc_reducer((1,), ...)`` fed by a 1-D
``T.Parallel``), carries a dependence from each iteration to the next: as vector
lanes every lane read the same old value and the store kept one lane, so on
``llvm`` (whose `cpu-split-vector-loops` cuts the loop into 16-lane chunks) a sum
of 128 ones was 8. It stays a serial loop.

With ``serial_one_block_grids`` (the ``llvm`` pipeline), a parallel loop of
constant extent 1 (a one-block grid) becomes serial too: the calling thread runs
it instead of a thread team woken for one task. (On ``c``, `cpu-mark-parallel-loops`
does the same after `cpu-stack-block-locals` has placed the block's arrays.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.passes.mark_independent_loops import has_distinct_elements
from tl_ir.builtin_ops import builtin_op_names
from tl_ir.launch import LOOP_KIND_KEY, rebuild_loop
from tl_passes.pass_base import PassContext, PrimFuncPass

#: Calls that keep a loop scalar: opaque functions a vector lane cannot run.
#: (``if_then_else`` is absent on purpose: see the module docstring.)
SCALAR_ONLY_CALLS = builtin_op_names("call_extern", "tvm_call_packed", "tvm_call_cpacked")


def _carries_element_updates(stmts: list[tirx.BufferStore], var: tirx.Var) -> bool:
    """Whether a store writes one element for several iterations of a buffer the body reads."""
    loaded: list[Any] = []

    def visit(load: Any) -> None:
        loaded.append(load.source)

    for stmt in stmts:
        tvm_ffi.structural_walk(stmt, (tvm.ir.TensorLoad, visit), order="post")
    for stmt in stmts:
        read = any(source.same_as(stmt.buffer) for source in loaded)
        if read and not has_distinct_elements(list(stmt.indices), var):
            return True
    return False


def _vectorizable(body: tirx.Stmt, var: tirx.Var) -> bool:
    stmts = list(body.seq) if isinstance(body, tirx.SeqStmt) else [body]
    if not all(isinstance(s, tirx.BufferStore) for s in stmts):
        return False
    if _carries_element_updates(stmts, var):
        return False
    simple = True

    def visit(call: Any) -> None:
        nonlocal simple
        name = str(getattr(call.op, "name", ""))
        if name in SCALAR_ONLY_CALLS:
            simple = False

    tvm_ffi.structural_walk(body, (tvm.ir.Call, visit), order="post")
    return simple


def _single_iteration_parallel(loop: tirx.For) -> bool:
    return (
        loop.kind == tirx.ForKind.PARALLEL
        and isinstance(loop.extent, tirx.IntImm)
        and int(loop.extent) == 1
    )


def lower_parallel_loops(
    stmt: tirx.Stmt, max_vector_extent: int, serial_one_block_grids: bool = False
) -> tirx.Stmt:
    """Return ``stmt`` with ``T.Parallel`` loops lowered (see the module docstring)."""

    def rewrite(loop: tirx.For) -> tirx.For:
        annotations = dict(loop.annotations.items()) if loop.annotations else {}
        if serial_one_block_grids and _single_iteration_parallel(loop):
            return rebuild_loop(loop, kind=tirx.ForKind.SERIAL, annotations=annotations)
        if LOOP_KIND_KEY not in annotations:
            return loop
        kind_name = str(annotations.pop(LOOP_KIND_KEY))
        kind = loop.kind
        if kind_name == "parallel":
            extent = loop.extent
            constant = isinstance(extent, tirx.IntImm) and 1 < int(extent) <= max_vector_extent
            vector = constant and _vectorizable(loop.body, loop.loop_var)
            kind = tirx.ForKind.VECTORIZED if vector else tirx.ForKind.SERIAL
        return rebuild_loop(loop, kind=kind, annotations=annotations)

    return tvm_ffi.structural_map(stmt, (tirx.For, rewrite), order="post")


@dataclass(frozen=True)
class CpuLowerParallelLoopsPass(PrimFuncPass):
    """Lower ``T.Parallel`` loops for the CPU.

    Args:
        max_vector_extent: the longest loop turned into vector lanes.
        serial_one_block_grids: make parallel loops of constant extent 1 serial.
    """

    name: ClassVar[str] = "cpu-lower-parallel-loops"
    max_vector_extent: int = 256
    serial_one_block_grids: bool = False

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its ``T.Parallel`` loops lowered."""
        return lower_parallel_loops(body, self.max_vector_extent, self.serial_one_block_grids)
