"""The CPU backend's lowering helpers: what its passes (``tl_codegen_cpu.passes``) build with.

Emitters (the tile-op loops of `tile_emitters`, the GEMM micro-kernel of
`gemm_microkernel`, the atomics of `atomics`, the fp16 conversion calls of
`half_conversions`), what the host's vector unit offers (`VectorISA`), and the
analyses the passes share (index values, thread regions, ownership of atomics,
forwarding chains). None of them is a pass; the C they call is in
``tl_codegen_cpu/include/`` (`tl_codegen_cpu.c_headers`).
"""

from tl_codegen_cpu.lowering.atomics import (
    ATOMIC_DTYPES,
    ATOMIC_KINDS,
    atomic_function_name,
    emit_atomic_update,
    emit_tile_atomic,
)
from tl_codegen_cpu.lowering.gemm_microkernel import (
    MICROKERNEL_STYLES,
    SUPPORTED_OPERAND_DTYPES,
    GemmOperand,
    RegisterTile,
    choose_register_tile,
    emit_gemm_microkernel,
)
from tl_codegen_cpu.lowering.tile_emitters import (
    REDUCE_KINDS,
    TileRegion,
    emit_tile_copy,
    emit_tile_cumsum,
    emit_tile_fill,
    emit_tile_reduce,
)
from tl_codegen_cpu.lowering.vector_isa import VectorISA, host_cpu_name, vector_isa_for_target

__all__ = [
    "ATOMIC_DTYPES",
    "ATOMIC_KINDS",
    "MICROKERNEL_STYLES",
    "REDUCE_KINDS",
    "SUPPORTED_OPERAND_DTYPES",
    "GemmOperand",
    "RegisterTile",
    "TileRegion",
    "VectorISA",
    "atomic_function_name",
    "choose_register_tile",
    "emit_atomic_update",
    "emit_gemm_microkernel",
    "emit_tile_atomic",
    "emit_tile_copy",
    "emit_tile_cumsum",
    "emit_tile_fill",
    "emit_tile_reduce",
    "host_cpu_name",
    "vector_isa_for_target",
]
