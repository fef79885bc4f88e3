"""`cpu-scalarize-vector-accesses`: stores of vector values a kernel writes by hand
become vectorized loops.

A kernel may write vector accesses itself: ``B[t, T.Ramp(0, 1, 4)] =
A[T.Ramp(t - 2, 1, 4)]`` or ``X[T.Ramp(0, 1, 32)] = T.Broadcast(v, 32)``. TVM's C
printer prints such an access with OpenCL-style vector types gcc does not know
(``int32_t4``, ``float4``: the kernel failed to build), and on ``llvm`` the CPU
passes treated the vector store as one element (each iteration stored lane 0: a
silent wrong answer). This pass, the first after the GPU-only checks, writes each
such store as a ``T.vectorized`` loop over its lanes with every vector
sub-expression taken lane by lane (a ``Ramp`` is ``base + stride * lane``, a
``Broadcast`` its value), so the accesses take the same path as a kernel's own
``T.vectorized`` loops. A vector store reads all its lanes before it writes any:
when the value reads the buffer it stores to, the lanes go through a local array
first.

Vector expressions this pass cannot take lane by lane (a ``Shuffle``, a vector
``Let``) raise a NotImplementedError naming the expression.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir import scopes
from tl_ir.launch import LOOP_KIND_KEY
from tl_passes.pass_base import PassContext, PrimFuncPass
from tl_passes.vector_lanes import LaneSplitError, expression_lanes, lane_of

__all__ = ["CpuScalarizeVectorAccessesPass", "scalarize_vector_accesses"]


def _lane_of(expr: Any, lane: Any) -> Any:
    """Lane ``lane`` of the vector expression ``expr``, refused with the spelling the
    CPU targets take instead."""
    try:
        return lane_of(expr, lane)
    except LaneSplitError as error:
        raise NotImplementedError(
            f"cpu-scalarize-vector-accesses: the CPU targets cannot take the vector "
            f"expression {type(error.node).__name__} ({error.node}) lane by lane; write "
            "it as a T.vectorized loop over scalar elements"
        ) from None


def _scalar_type(expr: Any) -> str:
    return str(tvm.DataType(str(expr.dtype)).with_lanes(1))


def _reads(expr: Any, buffer: Any) -> bool:
    found = False

    def visit(load: Any) -> None:
        nonlocal found
        found = found or load.source.same_as(buffer)

    tvm_ffi.structural_walk(expr, [(tvm.ir.TensorLoad, visit)])
    return found


def _lane_loop(lanes: int, make_body: Any) -> Any:
    lane = tirx.Var("lane", "int32")
    annotations = {LOOP_KIND_KEY: tvm.ir.StringImm("vectorized")}
    return tirx.For(
        lane, 0, lanes, tirx.ForKind.VECTORIZED, make_body(lane), annotations=annotations
    )


def _scalarized(store: Any) -> Any:
    lanes = max([expression_lanes(store.value), *(expression_lanes(i) for i in store.indices)])
    if lanes == 1:
        return store

    def write(value_of: Any) -> Any:
        def body(lane: Any) -> Any:
            indices = [_lane_of(i, lane) for i in store.indices]
            # The lane's store keeps the source line: checked mode reports it.
            return tirx.BufferStore(store.buffer, value_of(lane), indices, span=store.span)

        return body

    if not _reads(store.value, store.buffer):
        return _lane_loop(lanes, write(lambda lane: _lane_of(store.value, lane)))
    staged = tirx.decl_buffer((lanes,), _scalar_type(store.value), name="lanes", scope=scopes.LOCAL)
    gather = _lane_loop(
        lanes, lambda lane: tirx.BufferStore(staged, _lane_of(store.value, lane), [lane])
    )
    scatter = _lane_loop(lanes, write(lambda lane: tirx.BufferLoad(staged, [lane])))
    return tirx.SeqStmt([tirx.AllocBuffer(staged), gather, scatter])


def scalarize_vector_accesses(stmt: tirx.Stmt) -> tirx.Stmt:
    """``stmt`` with each store of a vector value, or at a vector index, written as a
    vectorized loop over its lanes (module docstring)."""
    return tvm_ffi.structural_map(stmt, (tirx.BufferStore, _scalarized), order="post")


@dataclass(frozen=True)
class CpuScalarizeVectorAccessesPass(PrimFuncPass):
    """Hand-written vector stores as vectorized loops over their lanes (module
    docstring)."""

    name: ClassVar[str] = "cpu-scalarize-vector-accesses"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its vector stores taken lane by lane."""
        return scalarize_vector_accesses(body)
