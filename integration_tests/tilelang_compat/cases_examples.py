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


_ATTENTION = {"batch": 1, "heads": 2, "seq_len": 128, "dim": 64, "block_M": 64, "block_N": 64}

CASES = [
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
