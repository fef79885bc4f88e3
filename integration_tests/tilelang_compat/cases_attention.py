"""Cases from TileLang's attention examples (classic style): forward, GQA, split-KV decode."""

from __future__ import annotations

from typing import Any

import numpy as np

from integration_tests.tilelang_compat.harness import Arrays, Case


def attention(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, *, layout: str, causal: bool, groups: int = 1
) -> np.ndarray:
    """Softmax attention in float64; ``layout`` "bhsd" or "bshd"; a causal mask aligned at
    the end of the key sequence (query i sees keys up to i + len(k) - len(q))."""
    if layout == "bshd":
        q, k, v = (x.transpose(0, 2, 1, 3) for x in (q, k, v))
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    k = np.repeat(k, groups, axis=1)
    v = np.repeat(v, groups, axis=1)
    scores = np.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(q.shape[-1])
    if causal:
        sq, sk = q.shape[2], k.shape[2]
        mask = np.tril(np.ones((sq, sk), bool), sk - sq)
        scores = np.where(mask, scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    out = np.einsum("bhqk,bhkd->bhqd", weights, v)
    return out.transpose(0, 2, 1, 3) if layout == "bshd" else out


def _normal(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float16)


def _bhsd_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    b, h, d = a["batch"], a["heads"], a["dim"]
    return [
        _normal(rng, b, h, a["seq_q"], d),
        _normal(rng, b, h, a["seq_kv"], d),
        _normal(rng, b, h, a["seq_kv"], d),
    ]


def _bhsd_ref(a: dict[str, Any], q: Any, k: Any, v: Any) -> Arrays:
    return [attention(q, k, v, layout="bhsd", causal=a["is_causal"]).astype(np.float16)]


def _gqa_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    b, s, h, d, g = a["batch"], a["seq_len"], a["heads"], a["dim"], a["groups"]
    return [_normal(rng, b, s, h, d), _normal(rng, b, s, h // g, d), _normal(rng, b, s, h // g, d)]


def _gqa_ref(a: dict[str, Any], q: Any, k: Any, v: Any) -> Arrays:
    out = attention(q, k, v, layout="bshd", causal=a["is_causal"], groups=a["groups"])
    return [out.astype(np.float16)]


def _inference_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    b, h, d = a["batch"], a["heads"], a["dim"]
    return [
        _normal(rng, b, a["seqlen_q"], h, d),
        _normal(rng, b, a["seqlen_kv"], h, d),
        _normal(rng, b, a["seqlen_kv"], h, d),
    ]


def _inference_ref(a: dict[str, Any], q: Any, k: Any, v: Any) -> Arrays:
    return [attention(q, k, v, layout="bshd", causal=a["is_causal"]).astype(np.float16)]


_BHSD = {"batch": 1, "heads": 2, "dim": 64, "block_M": 64, "block_N": 64, "threads": 128}
_FA_SOURCE = "examples/flash_attention/example_mha_fwd_bhsd.py@e23bce79d"
_GQA = {"batch": 1, "heads": 4, "seq_len": 128, "dim": 64, "groups": 2, "block_M": 64, "block_N": 64}

CASES = [
    Case(
        "example_mha_fwd_bhsd.flashattn",
        _FA_SOURCE,
        "example_mha_fwd_bhsd:flashattn",
        {**_BHSD, "seq_q": 128, "seq_kv": 128, "is_causal": False},
        _bhsd_inputs,
        _bhsd_ref,
        rtol=1e-2,
        atol=1e-2,
    ),
    Case(
        "example_mha_fwd_bhsd.flashattn-causal-past",
        _FA_SOURCE,
        "example_mha_fwd_bhsd:flashattn",
        {**_BHSD, "seq_q": 64, "seq_kv": 192, "is_causal": True},
        _bhsd_inputs,
        _bhsd_ref,
        rtol=1e-2,
        atol=1e-2,
    ),
    Case(
        "example_gqa_fwd_bshd.flashattn",
        "examples/flash_attention/example_gqa_fwd_bshd.py@d7e264f32",
        "example_gqa_fwd_bshd:flashattn",
        {**_GQA, "is_causal": False},
        _gqa_inputs,
        _gqa_ref,
        rtol=1e-2,
        atol=1e-2,
    ),
    Case(
        "example_gqa_fwd_bshd.flashattn-causal",
        "examples/flash_attention/example_gqa_fwd_bshd.py@d7e264f32",
        "example_gqa_fwd_bshd:flashattn",
        {**_GQA, "is_causal": True},
        _gqa_inputs,
        _gqa_ref,
        rtol=1e-2,
        atol=1e-2,
    ),
    Case(
        "example_mha_inference.flashattn",
        "examples/flash_decoding/example_mha_inference.py@baf8a1634",
        "example_mha_inference:flashattn",
        {
            "batch": 1,
            "heads": 2,
            "seqlen_q": 64,
            "seqlen_kv": 512,
            "dim": 64,
            "is_causal": False,
            "block_M": 64,
            "block_N": 64,
        },
        _inference_inputs,
        _inference_ref,
        rtol=1e-2,
        atol=1e-2,
    ),
]
