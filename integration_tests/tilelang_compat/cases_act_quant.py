"""Cases from TileLang's DeepSeek-V4 activation quantization
(``examples/deepseek_v4/act_quant.py``): block-wise bfloat16 -> fp8 e4m3 with one float32
scale per 32 rows x 128 columns block row, the scale either ``amax / 448`` or rounded up
to a power of two through the float's bits (``T.reinterpret``, shifts and masks)."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from integration_tests.tilelang_compat.harness import Arrays, Case

_FP8_MAX = np.float32(448.0)
_ROWS = 64
"""M, a T.dynamic extent of the program: taken from the input, not an argument."""
_FP8_ARCH = "sm_89"
"""The first arch with fp8 conversions (as for the corpus's other fp8 casts)."""


def _inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    x = (rng.standard_normal((_ROWS, a["N"])) * 3).astype(ml_dtypes.bfloat16)
    x[0, : a["block_size"]] = 0  # an all-zero group: its amax is clamped to 1e-4
    return [x]


def _power_of_two_at_least(values: np.ndarray) -> np.ndarray:
    """``2 ** ceil(log2(v))`` of positive normal float32 values, from their bits as the
    kernel computes it (exponent, plus one when any mantissa bit is set)."""
    bits = values.astype(np.float32).view(np.uint32)
    exponent = ((bits >> np.uint32(23)) & np.uint32(0xFF)).astype(np.int32) - 127
    exponent += (bits & np.uint32((1 << 23) - 1) != 0).astype(np.int32)
    return ((exponent + 127).astype(np.uint32) << np.uint32(23)).view(np.float32)


def _ref(a: dict[str, Any], x: np.ndarray) -> Arrays:
    m, n, group = x.shape[0], a["N"], a["block_size"]
    groups = x.astype(np.float32).reshape(m, n // group, group)
    amax = np.maximum(np.abs(groups).max(axis=2), np.float32(1e-4))
    scaled = (amax * np.float32(1 / 448.0)).astype(np.float32)
    scale = _power_of_two_at_least(scaled) if a["round_scale"] else scaled
    q = np.clip(groups / scale[:, :, None], -_FP8_MAX, _FP8_MAX).astype(np.float32)
    return [q.reshape(m, n).astype(ml_dtypes.float8_e4m3fn), scale]


_SOURCE = "examples/deepseek_v4/act_quant.py"

CASES = [
    Case(
        "example_act_quant.fp8_quant_kernel",
        _SOURCE,
        "example_act_quant:fp8_quant_kernel",
        {"N": 256, "block_size": 128, "round_scale": False},
        _inputs,
        _ref,
        out_idx=[1, 2],
        rtol=1e-6,
        atol=0,
        cuda_arch=_FP8_ARCH,
    ),
    Case(
        "example_act_quant.fp8_quant_kernel-round-scale",
        _SOURCE,
        "example_act_quant:fp8_quant_kernel",
        {"N": 256, "block_size": 128, "round_scale": True},
        _inputs,
        _ref,
        out_idx=[1, 2],
        rtol=1e-6,
        atol=0,
        cuda_arch=_FP8_ARCH,
    ),
]
