"""`cpu-split-vector-loops`: vectorized loops longer than a register become register-wide chunks.

TVM's vectorizer turns a ``vectorized`` loop of extent ``n`` into one
``n``-lane vector operation. For a tile row of 1024 fp32 that is a
4 KiB vector value, which LLVM legalizes into dozens of registers and
spills. This pass splits every vectorized loop whose extent exceeds the
target's lanes for the loop's widest element type: extents that are a
multiple of the lanes become a serial loop over register-wide vectorized
chunks; other long extents become serial loops (LLVM's own loop vectorizer
then handles them, remainder included).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.vector_isa import VectorISA, vector_isa_for_target
from tl_ir.launch import rebuild_loop
from tl_passes.buffer_rewrite import substitute_vars
from tl_passes.pass_base import PassContext, PrimFuncPass


def _widest_bits(body: tirx.Stmt) -> int:
    bits = [8]

    def visit_store(store: Any) -> None:
        bits.append(int(tvm.DataType(str(store.buffer.dtype)).bits))

    def visit_load(load: Any) -> None:
        bits.append(int(tvm.DataType(str(load.source.ty.dtype)).bits))

    tvm_ffi.structural_walk(
        body, [(tirx.BufferStore, visit_store), (tvm.ir.TensorLoad, visit_load)], order="post"
    )
    return max(bits)


def split_vector_loops(stmt: tirx.Stmt, isa: VectorISA) -> tirx.Stmt:
    """Return ``stmt`` with long vectorized loops split (see the module docstring)."""

    def rewrite(loop: tirx.For) -> tirx.Stmt:
        if loop.kind != tirx.ForKind.VECTORIZED or not isinstance(loop.extent, tirx.IntImm):
            return loop
        extent = int(loop.extent)
        lanes = max(1, isa.vector_bits // _widest_bits(loop.body))
        if extent <= lanes:
            return loop
        if extent % lanes:
            return rebuild_loop(loop, kind=tirx.ForKind.SERIAL)
        outer = tirx.Var(f"{loop.loop_var.name}_chunk", "int32")
        lane = tirx.Var(f"{loop.loop_var.name}_lane", "int32")
        body = substitute_vars(loop.body, {loop.loop_var: loop.min + outer * lanes + lane})
        inner = tirx.For(lane, 0, lanes, tirx.ForKind.VECTORIZED, body)
        return tirx.For(outer, 0, extent // lanes, tirx.ForKind.SERIAL, inner)

    return tvm_ffi.structural_map(stmt, (tirx.For, rewrite), order="post")


@dataclass(frozen=True)
class CpuSplitVectorLoopsPass(PrimFuncPass):
    """Split long vectorized loops into register-wide chunks for the target's vector unit."""

    name: ClassVar[str] = "cpu-split-vector-loops"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its long vectorized loops split."""
        return split_vector_loops(body, vector_isa_for_target(ctx.target))
