"""Flash attention forward (MHA and GQA, causal and not), softmax and RMS norm lowered for
CUDA and run under the CPU emulation against float64 numpy (issue 19, point 6).

The attention kernels are TileLang's examples (``example_mha_fwd_bhsd``,
``example_gqa_fwd_bshd``: two gemms per KV tile, the online softmax on the score
fragment, P cast to f16 for the second gemm) at small sizes: 64 x 64 tiles, head dim
64, 128 threads, sequences of two tiles, so the online rescaling and the causal mask
across tiles are exercised.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cuda_emulation as emu
import emulated_programs as programs

pytestmark = pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")

# f16 inputs and output, f32 accumulation, P rounded to f16 before P @ V.
ATTENTION_TOLERANCE = {"rtol": 1e-2, "atol": 1e-2}


def _qkv(shapes: list[tuple[int, ...]], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float16) for shape in shapes]


@pytest.mark.parametrize("is_causal", [False, True])
def test_flash_attention_mha_bhsd(is_causal: bool) -> None:
    # seq_kv > seq_q: the causal mask is offset by the KV history (past_len = 64).
    batch, heads, seq_q, seq_kv, dim = 1, 2, 64, 128, 64
    q, k, v = _qkv(
        [(batch, heads, seq_q, dim), (batch, heads, seq_kv, dim), (batch, heads, seq_kv, dim)],
        seed=int(is_causal),
    )
    arrays = {"Q": q, "K": k, "V": v, "Output": np.zeros_like(q)}
    emu.emulate(programs.flash_attention_bhsd(batch, heads, seq_q, seq_kv, dim, is_causal), arrays)
    want = programs.attention_reference(q, k, v, is_causal)
    np.testing.assert_allclose(arrays["Output"].astype(np.float64), want, **ATTENTION_TOLERANCE)


@pytest.mark.parametrize("is_causal", [False, True])
def test_flash_attention_gqa_bshd(is_causal: bool) -> None:
    # Four query heads over two K/V heads; a 128-long sequence (two tiles each way).
    batch, heads, seq_len, dim, groups = 1, 4, 128, 64, 2
    q, k, v = _qkv(
        [
            (batch, seq_len, heads, dim),
            (batch, seq_len, heads // groups, dim),
            (batch, seq_len, heads // groups, dim),
        ],
        seed=2 + int(is_causal),
    )
    arrays = {"Q": q, "K": k, "V": v, "Output": np.zeros_like(q)}
    func = programs.flash_attention_gqa_bshd(batch, heads, seq_len, dim, is_causal, groups)
    emu.emulate(func, arrays)
    # Reference in bhsd with each K/V head repeated for its query heads.
    q_bhsd = q.transpose(0, 2, 1, 3)
    k_bhsd = np.repeat(k.transpose(0, 2, 1, 3), groups, axis=1)
    v_bhsd = np.repeat(v.transpose(0, 2, 1, 3), groups, axis=1)
    want = programs.attention_reference(q_bhsd, k_bhsd, v_bhsd, is_causal).transpose(0, 2, 1, 3)
    np.testing.assert_allclose(arrays["Output"].astype(np.float64), want, **ATTENTION_TOLERANCE)


def test_softmax_rows() -> None:
    M, N = 24, 128  # three blocks of 8 rows, the last one full
    x = np.random.default_rng(4).standard_normal((M, N)).astype(np.float32) * 4
    arrays = {"X": x, "Y": np.zeros_like(x)}
    emu.emulate(programs.softmax_rows(M, N, 8), arrays)
    shifted = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    want = shifted / shifted.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(arrays["Y"], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_rms_norm(dtype: str) -> None:
    M, N = 20, 128  # 20 rows in blocks of 8: a partial last block
    a = np.random.default_rng(6).standard_normal((M, N)).astype(dtype)
    arrays = {"A": a, "B": np.zeros_like(a)}
    emu.emulate(programs.rms_norm(M, N, 8, dtype), arrays)
    a64 = a.astype(np.float64)
    want = a64 / np.sqrt((a64 * a64).mean(axis=1, keepdims=True) + 1e-12)
    tolerance = {"rtol": 1e-5, "atol": 1e-5} if dtype == "float32" else {"rtol": 2e-3, "atol": 2e-3}
    np.testing.assert_allclose(arrays["B"].astype(np.float64), want, **tolerance)


@pytest.mark.slow
@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("num_stages", [2, 3])
def test_flash_attention_pipelined_longer_sequences(is_causal: bool, num_stages: int) -> None:
    batch, heads, seq_q, seq_kv, dim = 1, 1, 128, 256, 64
    q, k, v = _qkv(
        [(batch, heads, seq_q, dim), (batch, heads, seq_kv, dim), (batch, heads, seq_kv, dim)],
        seed=10 + num_stages,
    )
    arrays = {"Q": q, "K": k, "V": v, "Output": np.zeros_like(q)}
    func = programs.flash_attention_bhsd(
        batch, heads, seq_q, seq_kv, dim, is_causal, num_stages=num_stages
    )
    emu.emulate(func, arrays)
    want = programs.attention_reference(q, k, v, is_causal)
    np.testing.assert_allclose(arrays["Output"].astype(np.float64), want, **ATTENTION_TOLERANCE)
