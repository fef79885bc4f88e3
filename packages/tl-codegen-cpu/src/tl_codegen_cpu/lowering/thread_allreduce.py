"""A thread reduction (``tvm_thread_allreduce``) as a horizontal vector sum (used by
`cpu-lower-launch`).

`thread_regions` lowers ``tvm_thread_allreduce`` into three pieces run once per
block (per value of the threads not reduced over): the accumulator set to the
reducer's identity, a loop over the reduced threads folding each thread's value
into it, and a loop publishing the result to every thread. The fold loop carries
`ALLREDUCE_KEY`. Run as written it is a chain of dependent scalar adds, one per
thread (through memory: the accumulator is block-shared).

For a **sum** over **one** thread index with a constant count, no condition
(``True``) and an accumulator dtype the vector registers hold, the fold loop
becomes a vector of ``V`` partial sums updated by a vectorized loop (the
threads' values are contiguous when the per-thread array holds them at
consecutive thread indices) and a tree of half-width vector adds into the
accumulator (`thread_lanes.laned_sum`, the same code as a thread's own sums).
That is the reordering any parallel reduction makes (a GPU reduces in a tree
as well). Anything else keeps the scalar fold loop (the fallback); either way
the path taken is the nest's ``tl.cpu_thread_path`` (TL_DUMP_IR).
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.thread_ir import reads_buffer
from tl_codegen_cpu.lowering.thread_lanes import THREAD_PATH_KEY, laned_sum
from tl_codegen_cpu.lowering.vector_isa import VectorISA
from tl_ir.launch import rebuild_loop

#: Annotation on the outermost loop of a thread reduction's fold nest: the reducer's
#: kind ("sum", or "other" for any reducer that is not ``x + y``).
ALLREDUCE_KEY = "tl.cpu_thread_allreduce"


def is_sum_reducer(reducer: Any) -> bool:
    """Whether a ``comm_reducer`` of one value is ``x + y`` with identity 0."""
    if len(reducer.lhs) != 1 or len(reducer.result) != 1:
        return False
    result, lhs, rhs = reducer.result[0], reducer.lhs[0], reducer.rhs[0]
    if not isinstance(result, tirx.Add):
        return False
    operands = (result.a, result.b)
    in_order = operands[0].same_as(lhs) and operands[1].same_as(rhs)
    swapped = operands[0].same_as(rhs) and operands[1].same_as(lhs)
    identity = reducer.identity_element[0]
    while isinstance(identity, tirx.Cast):
        identity = identity.value
    zero = isinstance(identity, tirx.IntImm | tirx.FloatImm) and float(identity.value) == 0.0
    return (in_order or swapped) and zero


def _is_true(condition: Any) -> bool:
    return isinstance(condition, tirx.IntImm) and int(condition.value) != 0


def _accumulation(store: Any) -> Any:
    """The added term of ``acc[i] = acc[i] + e`` (or ``e + acc[i]``), or None."""
    if not isinstance(store, tirx.BufferStore) or not isinstance(store.value, tirx.Add):
        return None
    for mine, other in ((store.value.a, store.value.b), (store.value.b, store.value.a)):
        if (
            isinstance(mine, tvm.ir.TensorLoad)
            and mine.source.same_as(store.buffer)
            and len(mine.indices) == len(store.indices)
            and all(
                tvm_ffi.structural_equal(x, y)
                for x, y in zip(mine.indices, store.indices, strict=True)
            )
            and not reads_buffer(other, store.buffer)
        ):
            return other
    return None


def lane_thread_allreduce(nest: Any, isa: VectorISA) -> tuple[Any | None, str]:
    """``(statement, path)`` for a fold nest marked `ALLREDUCE_KEY`: the laned sum
    (under a `THREAD_PATH_KEY` attribute) and ``"lanes: ..."``, or None and
    ``"scalar: ..."`` with why (the nest stays as it is)."""
    kind = str(nest.annotations[ALLREDUCE_KEY].value)
    name = nest.loop_var.name
    why = None
    body = nest.body
    if kind != "sum":
        why = "the reducer is not a sum"
    elif isinstance(body, tirx.For):
        why = "it reduces over more than one thread index"
    else:
        if isinstance(body, tirx.IfThenElse):
            if not _is_true(body.condition) or body.else_case is not None:
                why = "it holds under a condition on the threads"
            body = body.then_case
        term = _accumulation(body) if why is None else None
        if why is None and term is None:
            why = "its fold is not one accumulation"
        if why is None:
            loop = rebuild_loop(nest, kind=tirx.ForKind.SERIAL, body=body, annotations=None)
            laned = laned_sum(loop, body.buffer, tuple(body.indices), term, isa)
            if isinstance(laned, str):
                why = laned
            else:
                path = f"lanes: thread reduction over {name} as a vector sum"
                return _annotated(tirx.SeqStmt(laned), path), path
    return None, f"scalar: thread reduction over {name}: {why}"


def _annotated(stmt: Any, path: str) -> Any:
    return tirx.AttrStmt(tirx.const(0, "int32"), THREAD_PATH_KEY, tvm.ir.StringImm(path), stmt)
