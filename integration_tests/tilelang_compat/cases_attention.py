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
_GQA = {
    "batch": 1,
    "heads": 4,
    "seq_len": 128,
    "dim": 64,
    "groups": 2,
    "block_M": 64,
    "block_N": 64,
}

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


def _sink_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    return [*_bhsd_inputs(a, rng), _normal(rng, a["heads"])]


def _sink_ref(a: dict[str, Any], q: Any, k: Any, v: Any, sinks: Any) -> Arrays:
    """Causal attention (aligned at the end of the keys, optionally a sliding window)
    whose softmax denominator also holds exp(sink) per head."""
    q64, k64, v64 = (x.astype(np.float64) for x in (q, k, v))
    sq, sk = q.shape[2], k.shape[2]
    logits = np.einsum("bhqd,bhkd->bhqk", q64, k64) / np.sqrt(q.shape[-1])
    pos_q = np.arange(sq)[:, None] + (sk - sq)
    pos_k = np.arange(sk)[None, :]
    masked = pos_k > pos_q
    if a.get("window_size"):
        masked |= pos_k < pos_q - a["window_size"] + 1
    logits = np.where(masked, -np.inf, logits)
    sink = sinks.astype(np.float64)[None, :, None, None]
    top = np.maximum(logits.max(axis=-1, keepdims=True), sink)
    weights = np.exp(logits - top)
    weights /= weights.sum(axis=-1, keepdims=True) + np.exp(sink - top)
    return [np.einsum("bhqk,bhkd->bhqd", weights, v64).astype(np.float16)]


_SINK_SOURCE = "examples/attention_sink/example_mha_sink_fwd_bhsd.py@e23bce79d"

CASES += [
    Case(
        "example_mha_sink_fwd_bhsd.flashattn",
        _SINK_SOURCE,
        "example_mha_sink_fwd_bhsd:flashattn",
        {**_BHSD, "seq_q": 128, "seq_kv": 128},
        _sink_inputs,
        _sink_ref,
        rtol=1e-2,
        atol=1e-2,
    ),
    Case(
        "example_mha_sink_fwd_bhsd.flashattn-window",
        _SINK_SOURCE,
        "example_mha_sink_fwd_bhsd:flashattn",
        {**_BHSD, "seq_q": 64, "seq_kv": 256, "window_size": 128},
        _sink_inputs,
        _sink_ref,
        rtol=1e-2,
        atol=1e-2,
    ),
]


def _block_mask(rng: np.random.Generator, b: int, h: int, blocks: int, dtype: Any) -> np.ndarray:
    """A random block mask that keeps key block 0 and the diagonal (every query row then
    sees at least one key, causal or not)."""
    mask = rng.random((b, h, blocks, blocks)) < 0.5
    mask[..., 0] = True
    mask |= np.eye(blocks, dtype=bool)
    return mask.astype(dtype)


def _sparse_attention(q: Any, k: Any, v: Any, mask: Any, causal: bool, block: int = 64) -> Any:
    q64, k64, v64 = (x.astype(np.float64) for x in (q, k, v))
    sq, sk = q.shape[2], k.shape[2]
    allowed = np.repeat(np.repeat(mask.astype(bool), block, axis=2), block, axis=3)[:, :, :sq, :sk]
    if causal:
        allowed &= np.tril(np.ones((sq, sk), bool), sk - sq)
    scores = np.einsum("bhqd,bhkd->bhqk", q64, k64) / np.sqrt(q.shape[-1])
    scores = np.where(allowed, scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return np.einsum("bhqk,bhkd->bhqd", weights, v64).astype(np.float16)


def _seer_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    b, h = a["batch"], a["heads"]
    return [
        *_bhsd_inputs(a, rng),
        _block_mask(rng, b, h, a["downsample_len"], np.int8),
    ]


def _seer_ref(a: dict[str, Any], q: Any, k: Any, v: Any, mask: Any) -> Arrays:
    return [_sparse_attention(q, k, v, mask, a["is_causal"])]


def _sparse_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    b, h, s, d = a["batch"], a["heads"], a["seq_len"], a["dim"]
    return [
        _normal(rng, b, h, s, d),
        _normal(rng, b, h, s, d),
        _normal(rng, b, h, s, d),
        _block_mask(rng, b, h, a["downsample_len"], bool),
    ]


_SEER = {"batch": 1, "heads": 2, "seq_q": 256, "seq_kv": 256, "dim": 64, "downsample_len": 4}
_SPARSE = {"batch": 1, "heads": 2, "seq_len": 256, "dim": 64, "downsample_len": 4}

CASES += [
    Case(
        "example_seer_block_sparse_attn.blocksparse_flashattn",
        "examples/seer_attention/block_sparse_attn_tilelang.py@ded6a9922",
        "example_seer_block_sparse_attn:blocksparse_flashattn",
        {**_SEER, "is_causal": False},
        _seer_inputs,
        _seer_ref,
        rtol=1e-2,
        atol=1e-2,
    ),
    Case(
        "example_seer_block_sparse_attn.blocksparse_flashattn-causal",
        "examples/seer_attention/block_sparse_attn_tilelang.py@ded6a9922",
        "example_seer_block_sparse_attn:blocksparse_flashattn",
        {**_SEER, "is_causal": True},
        _seer_inputs,
        _seer_ref,
        rtol=1e-2,
        atol=1e-2,
    ),
    Case(
        "example_block_sparse_attn.blocksparse_flashattn-causal",
        "examples/blocksparse_attention/example_tilelang_block_sparse_attn.py@e23bce79d",
        "example_block_sparse_attn:blocksparse_flashattn",
        {**_SPARSE, "is_causal": True},
        _sparse_inputs,
        _seer_ref,
        rtol=1e-2,
        atol=1e-2,
    ),
    Case(
        "example_block_sparse_attn.blocksparse_flashattn",
        "examples/blocksparse_attention/example_tilelang_block_sparse_attn.py@e23bce79d",
        "example_block_sparse_attn:blocksparse_flashattn",
        {**_SPARSE, "is_causal": False},
        _sparse_inputs,
        _seer_ref,
        rtol=1e-2,
        atol=1e-2,
    ),
]
