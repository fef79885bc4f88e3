"""The tensor-core instructions and the ``ldmatrix`` load of the cuda backend, as
`tl_passes.gpu.MatrixInstruction` / `MatrixLoad` values.

Fragment maps transcribed from the PTX ISA's ``mma.m16n8k16`` (16-bit operands)
and ``mma.m16n8k32`` (8-bit operands) sections; ``g = lane // 4`` is the PTX
``groupID`` and ``t = lane % 4`` the ``threadID_in_group``. The device functions
are those of ``include/tl_tensor_core.h``.
"""

from __future__ import annotations

from typing import Any

from tvm.target import Target

from tl_passes.gpu import MatrixInstruction, MatrixLoad

from .features import compute_capability


def _a_m16k16(lane: Any, e: Any) -> tuple[Any, Any]:
    """A of m16n8k16 (a0..a7): rows g, g+8 alternate per register pair; k 8..15 from a4."""
    return lane // 4 + 8 * ((e // 2) % 2), (lane % 4) * 2 + e % 2 + 8 * (e // 4)


def _b_k16n8(lane: Any, e: Any) -> tuple[Any, Any]:
    """B of m16n8k16 (b0..b3): k = 2t + (e % 2), +8 for b2, b3; n = g."""
    return (lane % 4) * 2 + e % 2 + 8 * (e // 2), lane // 4


def _c_m16n8(lane: Any, e: Any) -> tuple[Any, Any]:
    """The accumulator of m16n8 (c0..c3), any element type: row g (c0, c1) or g+8."""
    return lane // 4 + 8 * (e // 2), (lane % 4) * 2 + e % 2


def _a_m16k32(lane: Any, e: Any) -> tuple[Any, Any]:
    """A of m16n8k32 with 8-bit elements (a0..a15): 4 consecutive k per register."""
    return lane // 4 + 8 * ((e // 4) % 2), (lane % 4) * 4 + e % 4 + 16 * (e // 8)


def _b_k32n8(lane: Any, e: Any) -> tuple[Any, Any]:
    """B of m16n8k32 with 8-bit elements (b0..b7): k = 4t + (e % 4), +16 from b4."""
    return (lane % 4) * 4 + e % 4 + 16 * (e // 4), lane // 4


def _sm80_or_newer(target: Target) -> bool:
    return compute_capability(target) >= 80


def _sm89_or_newer(target: Target) -> bool:
    return compute_capability(target) >= 89


def _m16n8k16(function: str, operand: str, acc: str) -> MatrixInstruction:
    return MatrixInstruction(
        function=function,
        a_dtype=operand,
        b_dtype=operand,
        acc_dtype=acc,
        m=16,
        n=8,
        k=16,
        a_map=_a_m16k16,
        b_map=_b_k16n8,
        c_map=_c_m16n8,
        a_elements=8,
        b_elements=4,
        c_elements=4,
        available=_sm80_or_newer,
    )


def _m16n8k32(function: str, operand: str, acc: str, fp8: bool = False) -> MatrixInstruction:
    return MatrixInstruction(
        function=function,
        a_dtype=operand,
        b_dtype=operand,
        acc_dtype=acc,
        m=16,
        n=8,
        k=32,
        a_map=_a_m16k32,
        b_map=_b_k32n8,
        c_map=_c_m16n8,
        a_elements=16,
        b_elements=8,
        c_elements=4,
        available=_sm89_or_newer if fp8 else _sm80_or_newer,
    )


#: ``mma.sync`` forms the lowering may pick: fp16/bf16 m16n8k16 with fp32 (or fp16)
#: accumulation, int8/uint8 m16n8k32 with int32 (sm_80+), fp8 e4m3/e5m2 m16n8k32
#: with fp32 (sm_89+).
CUDA_MATRIX_INSTRUCTIONS: tuple[MatrixInstruction, ...] = (
    _m16n8k16("tl_mma_m16n8k16_f32_f16_f16", "float16", "float32"),
    _m16n8k16("tl_mma_m16n8k16_f16_f16_f16", "float16", "float16"),
    _m16n8k16("tl_mma_m16n8k16_f32_bf16_bf16", "bfloat16", "float32"),
    _m16n8k32("tl_mma_m16n8k32_s32_s8_s8", "int8", "int32"),
    _m16n8k32("tl_mma_m16n8k32_s32_u8_u8", "uint8", "int32"),
    _m16n8k32("tl_mma_m16n8k32_f32_e4m3_e4m3", "float8_e4m3fn", "float32", fp8=True),
    _m16n8k32("tl_mma_m16n8k32_f32_e5m2_e5m2", "float8_e5m2", "float32", fp8=True),
)

#: ``ldmatrix.sync.aligned.m8n8`` (x1, x2, x4; ``.trans`` for 16-bit elements).
CUDA_MATRIX_LOAD = MatrixLoad(
    functions={1: "tl_ldmatrix_x1", 2: "tl_ldmatrix_x2", 4: "tl_ldmatrix_x4"},
    transposed_functions={
        1: "tl_ldmatrix_x1_trans",
        2: "tl_ldmatrix_x2_trans",
        4: "tl_ldmatrix_x4_trans",
    },
)
