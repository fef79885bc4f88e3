"""Lock-step accumulations as register-wide pieces (used by `thread_lockstep`).

In lock step a region's per-lane sums are one loop over ``lanes x chunk``
elements (``acc[f] = acc[f] + A[.. f] * B[.. f]`` for ``f < 64``) inside the
loop over blocks of K. The accumulator is an array of 64 or 128 floats; a
compiler keeps it in registers across the outer loop only when it sees each
register's part as its own access. LLVM's path splits long vector loops into
register-wide chunks (`cpu-split-vector-loops`) and so it does; gcc, whose
complete unrolling the C flags bound (`gcc.C_FLAGS`), loads and stores the
whole array on every iteration of the outer loop, a store-to-load chain per
register that cost `c` 1.4-2x numpy on TileLang's split-K GEMVs.

`chunk_accumulations` writes such a loop as consecutive register-wide vector
loops (``for f in T.vectorized(16): ...`` at offsets 0, 16, 32, ...): the same
statements for the same elements in the same order per element (each element's
sum keeps its order; the pieces only run one after another instead of
interleaved, which no element can tell: iteration ``f`` touches only element
``f`` of what it stores). Only loops whose body is straight-line stores, at
most half the ISA's vector registers long (`max_chunks`: 8 of 16 on AVX2, 16 of
32 on AVX-512; a longer accumulator could not stay in registers with its
operands, and stays a loop over memory), with at least one accumulation into a
thread-local array at the loop's element.
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.thread_ir import is_local, reads_buffer
from tl_codegen_cpu.lowering.vector_isa import VectorISA
from tl_ir.ops import const_int
from tl_passes.buffer_rewrite import substitute_vars


def max_chunks(isa: VectorISA) -> int:
    """The most register-wide pieces one loop becomes on ``isa`` (a longer one stays a
    loop): half its vector registers, the rest left to operands and other threads'
    copies (`thread_jam`)."""
    return max(1, isa.num_vector_registers // 2)


def _stores(body: Any) -> list[Any] | None:
    items = list(body.seq) if isinstance(body, tirx.SeqStmt) else [body]
    return items if all(isinstance(s, tirx.BufferStore) for s in items) else None


def _accumulates_at(store: Any, var: Any) -> bool:
    """``acc[var] = ... acc[var] ...`` into a thread-local array."""
    index = store.indices
    return (
        is_local(store.buffer)
        and len(index) == 1
        and isinstance(index[0], tvm.ir.Var)
        and index[0].same_as(var)
        and reads_buffer(store.value, store.buffer)
    )


def _only_own_element(stores: list[Any], var: Any) -> bool:
    """Every buffer a store writes is stored and loaded at ``[var]`` only (so iteration
    ``f`` touches element ``f`` alone: any order of the iterations is the same)."""
    written = [s.buffer for s in stores]
    ok = True

    def load(node: Any) -> None:
        nonlocal ok
        if any(node.source.same_as(b) for b in written) and not (
            len(node.indices) == 1
            and isinstance(node.indices[0], tvm.ir.Var)
            and node.indices[0].same_as(var)
        ):
            ok = False

    for store in stores:
        if not (
            len(store.indices) == 1
            and isinstance(store.indices[0], tvm.ir.Var)
            and store.indices[0].same_as(var)
        ):
            return False
        tvm_ffi.structural_walk(store.value, (tvm.ir.TensorLoad, load), order="post")
    return ok


def chunk_accumulations(stmt: Any, isa: VectorISA) -> Any:
    """``stmt`` with each lock-step accumulation loop longer than a register of
    ``isa`` (for the accumulator's dtype) written as register-wide vector loops
    (module docstring)."""

    def loop(node: Any) -> Any:
        stores = _stores(node.body)
        var = node.loop_var
        accumulations = [s for s in stores or [] if _accumulates_at(s, var)]
        if not accumulations:
            return node
        register_lanes = isa.lanes(str(accumulations[0].buffer.ty.dtype))
        extent = const_int(node.extent)
        if (
            register_lanes < 2
            or node.kind not in (tirx.ForKind.SERIAL, tirx.ForKind.VECTORIZED)
            or const_int(node.min) != 0
            or extent is None
            or extent <= register_lanes
            or extent % register_lanes
            or extent // register_lanes > max_chunks(isa)
        ):
            return node
        if stores is None or not _only_own_element(stores, var):
            return node
        pieces = []
        for chunk in range(extent // register_lanes):
            lane = tirx.Var(f"{var.name}_c{chunk}", "int32")
            offset = lane + chunk * register_lanes if chunk else lane
            body = substitute_vars(node.body, {var: offset})
            pieces.append(tirx.For(lane, 0, register_lanes, tirx.ForKind.VECTORIZED, body))
        return tirx.SeqStmt(pieces)

    return tvm_ffi.structural_map(stmt, (tirx.For, loop), order="post")
