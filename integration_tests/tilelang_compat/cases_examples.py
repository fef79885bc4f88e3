"""Cases from TileLang's examples/ (classic ``@T.prim_func`` style): attention, norms, scans."""

from __future__ import annotations

from typing import Any

import numpy as np

from integration_tests.tilelang_compat.harness import Arrays, Case


def _attention_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    shape = (a["batch"], a["seq_len"], a["heads"], a["dim"])
    return [rng.standard_normal(shape).astype(np.float16) for _ in range(3)]


def _attention_ref(a: dict[str, Any], q: np.ndarray, k: np.ndarray, v: np.ndarray) -> Arrays:
    q32, k32, v32 = (x.astype(np.float32) for x in (q, k, v))
    scores = np.einsum("bqhd,bkhd->bhqk", q32, k32) / np.sqrt(a["dim"])
    if a["is_causal"]:
        n = a["seq_len"]
        scores = np.where(np.tril(np.ones((n, n), bool)), scores, -np.inf)
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    scores /= scores.sum(axis=-1, keepdims=True)
    return [np.einsum("bhqk,bkhd->bqhd", scores, v32).astype(np.float16)]


def _layernorm_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    n, d = a["N"], a["D"]
    dtype = a["in_dtype"]
    return [
        rng.standard_normal((n, d)).astype(dtype),
        rng.standard_normal(d).astype(dtype),
        rng.standard_normal(d).astype(dtype),
    ]


def _layernorm_ref(a: dict[str, Any], x: np.ndarray, gamma: np.ndarray, beta: Any) -> Arrays:
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1)
    rstd = 1.0 / np.sqrt(x64.var(axis=1) + a.get("eps", 1e-5))
    y = (x64 - mean[:, None]) * rstd[:, None] * gamma + beta
    return [y.astype(a["out_dtype"]), mean.astype(np.float32), rstd.astype(np.float32)]


def _gdn_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    return [rng.standard_normal((a["B"], a["S"], a["H"])).astype(np.float16)]


def _gdn_ref(a: dict[str, Any], g: np.ndarray) -> Arrays:
    b, s, h = g.shape
    chunks = g.astype(np.float64).reshape(b, s // a["chunk_size"], a["chunk_size"], h)
    if a.get("reverse"):
        out = np.flip(np.cumsum(np.flip(chunks, 2), axis=2), 2)
    else:
        out = np.cumsum(chunks, axis=2)
    return [out.reshape(b, s, h).astype(np.float32)]


def _gemv_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    return [
        rng.standard_normal(a["K"]).astype(np.float16),
        rng.standard_normal((a["N"], a["K"])).astype(np.float16),
    ]


def _gemv_ref(a: dict[str, Any], x: np.ndarray, w: np.ndarray) -> Arrays:
    return [(w.astype(np.float32) @ x.astype(np.float32)).astype(np.float16)]


def _rms_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    return [rng.standard_normal((a["M"], a["N"])).astype(np.float32)]


def _rms_ref(a: dict[str, Any], x: np.ndarray) -> Arrays:
    x64 = x.astype(np.float64)
    scale = 1.0 / np.sqrt((x64 * x64).mean(axis=1, keepdims=True) + 1e-12)
    return [(x64 * scale).astype(np.float32)]


def _softmax_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    return [rng.standard_normal((a["M"], a["N"])).astype(np.float16)]


def _softmax_ref(a: dict[str, Any], x: np.ndarray) -> Arrays:
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return [(e / e.sum(axis=1, keepdims=True)).astype(np.float16)]


def _topk_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    # Distinct values (a permutation) so the k largest and their order are unique.
    m, n = a["M"], a["N"]
    return [np.stack([rng.permutation(n) for _ in range(m)]).astype(np.float32) / n]


def _topk_ref(a: dict[str, Any], logits: np.ndarray) -> Arrays:
    order = np.argsort(-logits, axis=1, kind="stable")[:, : a["topk"]]
    return [np.take_along_axis(logits, order, axis=1), order.astype(np.int32)]


def _splitk_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    m, n, k = a["M"], a["N"], a["K"]
    return [
        rng.standard_normal((m, k)).astype(np.float16),
        rng.standard_normal((n, k)).astype(np.float16),
        np.zeros((m, n), np.float32),
    ]


def _splitk_ref(a: dict[str, Any], x: np.ndarray, y: np.ndarray, c: np.ndarray) -> Arrays:
    # The kernel reads B[k, n] from the (N, K) tensor (square sizes): C += A @ B.
    return [c + x.astype(np.float32) @ y.astype(np.float32)]


def _add_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    shape = (a["M"], a["N"])
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(2)]


def _moe_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    hidden, expert = a["d_hidden"], a["d_expert"] * a["n_shared_experts"]
    tokens = a["num_tokens"]

    def weights(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float16)

    return [
        rng.standard_normal((tokens, hidden)).astype(np.float16),
        weights(expert, hidden),
        weights(expert, hidden),
        weights(hidden, expert),
        np.zeros((tokens, expert), np.float16),
        np.zeros((tokens, hidden), np.float16),
    ]


def _moe_ref(a: dict[str, Any], x: Any, w_gate: Any, w_up: Any, w_down: Any, *_: Any) -> Arrays:
    x32 = x.astype(np.float32)
    gate = x32 @ w_gate.astype(np.float32).T
    up = (x32 @ w_up.astype(np.float32).T) * gate / (1.0 + np.exp(-gate))
    up16 = up.astype(np.float16)
    out = up16.astype(np.float32) @ w_down.astype(np.float32).T
    return [up16, out.astype(np.float16)]


_ATTENTION = {"batch": 1, "heads": 2, "seq_len": 128, "dim": 64, "block_M": 64, "block_N": 64}

_GEMV = {"N": 128, "K": 256, "BLOCK_N": 32}

CASES = [
    Case(
        "example_gemv.naive_gemv",
        "examples/gemv/example_gemv.py@3ee0988c8",
        "example_gemv:naive_gemv",
        # One thread per output row: BLOCK_N is the block's thread count (T.Kernel's
        # default 128), as in TileLang's example.
        {**_GEMV, "N": 256, "BLOCK_N": 128, "BLOCK_K": 64},
        _gemv_inputs,
        _gemv_ref,
        rtol=1e-2,
        atol=1e-2,
    ),
    Case(
        "example_gemv.naive_splitk_gemv",
        "examples/gemv/example_gemv.py@3ee0988c8",
        "example_gemv:naive_splitk_gemv",
        {**_GEMV, "BLOCK_K": 32},
        _gemv_inputs,
        _gemv_ref,
        rtol=1e-2,
        atol=1e-2,
    ),
    Case(
        "example_gemv.splitk_gemv",
        "examples/gemv/example_gemv.py@3ee0988c8",
        "example_gemv:splitk_gemv",
        {**_GEMV, "BLOCK_K": 64, "reduce_threads": 8},
        _gemv_inputs,
        _gemv_ref,
        rtol=1e-2,
        atol=1e-2,
    ),
    Case(
        "example_gemv.splitk_gemv_vectorized",
        "examples/gemv/example_gemv.py@3ee0988c8",
        "example_gemv:splitk_gemv_vectorized",
        {**_GEMV, "reduce_threads": 8},
        _gemv_inputs,
        _gemv_ref,
        rtol=1e-2,
        atol=1e-2,
    ),
    Case(
        "example_rms_norm.rms_norm_splitk",
        "examples/norm/rms_norm.py@3ee0988c8",
        "example_rms_norm:rms_norm_splitk",
        {"M": 64, "N": 256, "blk_m": 2, "blk_k": 64},
        _rms_inputs,
        _rms_ref,
        out_idx=[1],
        rtol=1e-4,
        atol=1e-4,
    ),
    Case(
        "example_rms_norm.rms_norm",
        "examples/norm/rms_norm.py@3ee0988c8",
        "example_rms_norm:rms_norm",
        {"M": 64, "N": 256, "blk_m": 2},
        _rms_inputs,
        _rms_ref,
        rtol=1e-4,
        atol=1e-4,
    ),
    Case(
        "example_online_softmax.softmax_kernel",
        "examples/online_softmax/online_softmax.py@c750fb8a9",
        "example_online_softmax:softmax_kernel",
        {"M": 16, "N": 512},
        _softmax_inputs,
        _softmax_ref,
        rtol=1e-2,
        atol=1e-3,
    ),
    Case(
        "example_topk.tl_topk",
        "examples/topk/example_topk.py@ba23181d2",
        "example_topk:tl_topk",
        {"M": 64, "N": 64, "topk": 4, "blk_m": 16, "threads": 128},
        _topk_inputs,
        _topk_ref,
    ),
    Case(
        "example_gemm_splitk.matmul",
        "examples/gemm_splitk/example_tilelang_gemm_splitk.py@e23bce79d",
        "example_gemm_splitk:matmul",
        {"M": 64, "N": 64, "K": 64, "block_M": 32, "block_N": 32, "block_K": 16, "split_k": 2},
        _splitk_inputs,
        _splitk_ref,
        inplace=[2],
        rtol=1e-3,
        atol=1e-3,
    ),
    Case(
        "example_elementwise_add.elementwise_add",
        "examples/elementwise/example_elementwise_add.py@4fb96a0f5",
        "example_elementwise_add:elementwise_add",
        {
            "M": 128,
            "N": 96,
            "block_M": 32,
            "block_N": 32,
            "in_dtype": "float32",
            "out_dtype": "float32",
            "threads": 128,
        },
        _add_inputs,
        lambda a, x, y: [x + y],
    ),
    Case(
        "example_fusedmoe.moe_forward_tilelang_shared",
        "examples/fusedmoe/example_fusedmoe_tilelang.py@3ee0988c8",
        "example_fusedmoe:moe_forward_tilelang_shared",
        {
            "d_hidden": 128,
            "d_expert": 64,
            "n_shared_experts": 2,
            "dtype": "float16",
            "num_tokens": 64,
            "block_token": 32,
            "block_dhidden": 64,
            "block_dexpert": 64,
            "threads": 128,
        },
        _moe_inputs,
        _moe_ref,
        inplace=[4, 5],
        rtol=2e-2,
        atol=2e-2,
    ),
    Case(
        "example_flash_attention.flashattn",
        "examples/flash_attention/example_mha_fwd_bshd.py",
        "example_flash_attention:flashattn",
        {**_ATTENTION, "is_causal": False, "num_stages": 1, "threads": 128},
        _attention_inputs,
        _attention_ref,
        rtol=2e-2,
        atol=2e-2,
    ),
    Case(
        "example_flash_attention.flashattn-causal",
        "examples/flash_attention/example_mha_fwd_bshd.py",
        "example_flash_attention:flashattn",
        {**_ATTENTION, "is_causal": True, "num_stages": 1, "threads": 128},
        _attention_inputs,
        _attention_ref,
        rtol=2e-2,
        atol=2e-2,
    ),
    Case(
        "example_layernorm._layernorm_fwd",
        "examples/norm/layernorm.py",
        "example_layernorm:_layernorm_fwd",
        {"N": 64, "D": 128, "in_dtype": "float32", "out_dtype": "float32"},
        _layernorm_inputs,
        _layernorm_ref,
        rtol=1e-4,
        atol=1e-4,
    ),
    Case(
        "example_gdn_cumsum.tilelang_chunk_local_cumsum_scalar",
        "examples/gdn/example_cumsum.py",
        "example_gdn_cumsum:tilelang_chunk_local_cumsum_scalar",
        {"B": 2, "S": 256, "H": 4, "chunk_size": 64},
        _gdn_inputs,
        _gdn_ref,
        rtol=1e-3,
        atol=1e-3,
    ),
    Case(
        "example_gdn_cumsum.tilelang_chunk_local_cumsum_scalar-fragment-reverse",
        "examples/gdn/example_cumsum.py",
        "example_gdn_cumsum:tilelang_chunk_local_cumsum_scalar",
        {"B": 2, "S": 256, "H": 4, "chunk_size": 64, "use_fragment": True, "reverse": True},
        _gdn_inputs,
        _gdn_ref,
        rtol=1e-3,
        atol=1e-3,
    ),
]
