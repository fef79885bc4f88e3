"""Cases from TileLang's grouped-query attention decode
(``examples/flash_decoding/example_gqa_decode.py``): one query token per head, heads in
groups sharing a KV head, a per-position mask, the KV sequence split between programs
whose partial outputs and log-sum-exps a second kernel combines (``num_split > 1``) or
not split."""

from __future__ import annotations

from typing import Any

import numpy as np

from integration_tests.tilelang_compat.harness import Arrays, Case


def _inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    b, h, g, s, d = a["batch"], a["heads"], a["groups"], a["seqlen_kv"], a["dim"]
    mask = (rng.random((b, s, g)) < 0.8).astype(np.uint8)
    mask[:, 0, :] = 1  # every (batch, KV head) keeps at least one position
    return [
        rng.standard_normal((b, h, d)).astype(np.float16),
        rng.standard_normal((b, s, g, d)).astype(np.float16),
        rng.standard_normal((b, s, g, d)).astype(np.float16),
        mask,
    ]


def _ref(a: dict[str, Any], q: Any, k: Any, v: Any, mask: Any) -> Arrays:
    """Softmax attention of each query head over its KV head's unmasked positions (head
    ``i`` reads KV head ``i // (heads // groups)``, TileLang's reference grouping)."""
    heads, groups = a["heads"], a["groups"]
    kv_head = np.arange(heads) // (heads // groups)
    keys = k.astype(np.float64)[:, :, kv_head, :]  # (b, s, heads, d)
    values = v.astype(np.float64)[:, :, kv_head, :]
    scores = np.einsum("bhd,bshd->bhs", q.astype(np.float64), keys) / np.sqrt(a["dim"])
    keep = mask[:, :, kv_head].transpose(0, 2, 1) != 0  # (b, heads, s)
    scores = np.where(keep, scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return [np.einsum("bhs,bshd->bhd", weights, values).astype(np.float16)]


_SIZES = {
    "batch": 1,
    "heads": 8,
    "groups": 2,
    "seqlen_kv": 256,
    "dim": 64,
    "block_N": 64,
    "block_H": 64,
    "num_stages": 1,
    "threads": 128,
}
_SOURCE = "examples/flash_decoding/example_gqa_decode.py"

CASES = [
    Case(
        "example_gqa_decode.flashattn",
        _SOURCE,
        "example_gqa_decode:flashattn",
        {**_SIZES, "num_split": 1},
        _inputs,
        _ref,
        rtol=1e-2,
        atol=1e-2,
    ),
    Case(
        "example_gqa_decode.flashattn-split",
        _SOURCE,
        "example_gqa_decode:flashattn",
        {**_SIZES, "num_split": 2},
        _inputs,
        _ref,
        rtol=1e-2,
        atol=1e-2,
        # Two launches: nvcc takes 10-35 s on it on this machine (the unsplit case
        # covers the main kernel in the default run).
        tags=frozenset({"slow"}),
    ),
]
