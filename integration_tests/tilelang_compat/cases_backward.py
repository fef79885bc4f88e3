"""Cases from TileLang's attention backward example
(``examples/flash_attention/example_mha_bwd_bhsd.py``): the forward that also writes the
log-sum-exp, the ``Delta = rowsum(O * dO)`` preprocess, the backward kernel (dK, dV, and dQ
added with ``T.atomic_add``) and the dQ postprocess, each checked on its own against numpy.

The backward's dQ gets one atomic addition per key block: at these sizes (two key blocks)
the float sum is the same in either order, so the CPU targets agree bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from integration_tests.tilelang_compat.harness import Arrays, Case

_LOG2E = 1.44269504


def _shape(a: dict[str, Any]) -> tuple[int, int, int, int]:
    return (a["batch"], a["heads"], a["seq_len"], a["dim"])


def _half(rng: np.random.Generator, shape: tuple[int, ...], scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float16)


def _probabilities(a: dict[str, Any], q: Any, k: Any) -> tuple[np.ndarray, np.ndarray]:
    """Softmax of ``q k^T / sqrt(dim)`` (causal when asked) and its log2-sum-exp2 in the
    kernel's units (``lse = log2(sum_j 2^(s_ij * scale))``, ``scale = log2(e)/sqrt(dim)``)."""
    scores = np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), k.astype(np.float64))
    scores = scores * (_LOG2E / np.sqrt(a["dim"]))
    if a["is_causal"]:
        n = a["seq_len"]
        scores = np.where(np.tril(np.ones((n, n), bool)), scores, -np.inf)
    peak = scores.max(axis=-1, keepdims=True)
    weights = np.exp2(scores - peak)
    total = weights.sum(axis=-1, keepdims=True)
    lse = (np.log2(total) + peak)[..., 0]
    return weights / total, lse


def _fwd_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    return [_half(rng, _shape(a)) for _ in range(3)]


def _fwd_ref(a: dict[str, Any], q: Any, k: Any, v: Any) -> Arrays:
    probabilities, lse = _probabilities(a, q, k)
    out = np.einsum("bhqk,bhkd->bhqd", probabilities, v.astype(np.float64))
    return [out.astype(np.float16), lse.astype(np.float32)]


def _prep_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    return [_half(rng, _shape(a)), _half(rng, _shape(a))]


def _prep_ref(_a: dict[str, Any], o: Any, do: Any) -> Arrays:
    """``rowsum(O * dO)``; the kernel multiplies float16 fragments (a float16 product)."""
    products = (o.astype(np.float32) * do.astype(np.float32)).astype(np.float16)
    delta = products.astype(np.float64).sum(axis=-1)
    return [delta.astype(np.float32)]


def _bwd_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    """Q, K, V, dO, the forward's lse and Delta (computed here in float64), dQ zeroed
    (the kernel adds into it), dK and dV."""
    q, k, v = (_half(rng, _shape(a), 0.5) for _ in range(3))
    do = _half(rng, _shape(a))
    probabilities, lse = _probabilities(a, q, k)
    out = np.einsum("bhqk,bhkd->bhqd", probabilities, v.astype(np.float64))
    delta = (out * do.astype(np.float64)).sum(axis=-1)
    return [
        q,
        k,
        v,
        do,
        lse.astype(np.float32),
        delta.astype(np.float32),
        np.zeros(_shape(a), np.float32),
        np.zeros(_shape(a), np.float16),
        np.zeros(_shape(a), np.float16),
    ]


def _bwd_ref(
    a: dict[str, Any], q: Any, k: Any, v: Any, do: Any, lse: Any, delta: Any, *_outputs: Any
) -> Arrays:
    """``dV = P^T dO``, ``dS = P (dO V^T - Delta) / sqrt(dim)``, ``dK = dS^T Q``,
    ``dQ = dS K``, with P from the given lse and dS and P through float16 tiles as in
    the kernel."""
    q64, k64, v64, do64 = (x.astype(np.float64) for x in (q, k, v, do))
    scores = np.einsum("bhqd,bhkd->bhqk", q64, k64) * (_LOG2E / np.sqrt(a["dim"]))
    probabilities = np.exp2(scores - lse.astype(np.float64)[..., None])
    if a["is_causal"]:
        n = a["seq_len"]
        probabilities = np.where(np.tril(np.ones((n, n), bool)), probabilities, 0)
    d_probabilities = np.einsum("bhqd,bhkd->bhqk", do64, v64)
    d_scores = probabilities * (d_probabilities - delta.astype(np.float64)[..., None])
    d_scores = d_scores / np.sqrt(a["dim"])
    p16 = probabilities.astype(np.float16).astype(np.float64)
    ds16 = d_scores.astype(np.float16).astype(np.float64)
    dv = np.einsum("bhqk,bhqd->bhkd", p16, do64)
    dk = np.einsum("bhqk,bhqd->bhkd", ds16, q64)
    dq = np.einsum("bhqk,bhkd->bhqd", ds16, k64)
    return [dq.astype(np.float32), dk.astype(np.float16), dv.astype(np.float16)]


def _post_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    return [rng.standard_normal(_shape(a)).astype(np.float32)]


def _post_ref(_a: dict[str, Any], dq: Any) -> Arrays:
    return [dq.astype(np.float16)]


_SIZES = {"batch": 1, "heads": 2, "seq_len": 128, "dim": 64}
_BLOCKS = {"block_M": 64, "block_N": 64}
_SOURCE = "examples/flash_attention/example_mha_bwd_bhsd.py"

CASES = [
    Case(
        "example_mha_bwd_bhsd.flashattn_fwd",
        _SOURCE,
        "example_mha_bwd_bhsd:flashattn_fwd",
        {**_SIZES, **_BLOCKS, "is_causal": False},
        _fwd_inputs,
        _fwd_ref,
        rtol=1e-2,
        atol=1e-2,
    ),
    Case(
        "example_mha_bwd_bhsd.flashattn_fwd-causal",
        _SOURCE,
        "example_mha_bwd_bhsd:flashattn_fwd",
        {**_SIZES, **_BLOCKS, "is_causal": True},
        _fwd_inputs,
        _fwd_ref,
        rtol=1e-2,
        atol=1e-2,
    ),
    Case(
        "example_mha_bwd_bhsd.flashattn_bwd_preprocess",
        _SOURCE,
        "example_mha_bwd_bhsd:flashattn_bwd_preprocess",
        _SIZES,
        _prep_inputs,
        _prep_ref,
        rtol=1e-3,
        atol=1e-3,
    ),
    Case(
        "example_mha_bwd_bhsd.flashattn_bwd",
        _SOURCE,
        "example_mha_bwd_bhsd:flashattn_bwd",
        {**_SIZES, **_BLOCKS, "is_causal": False},
        _bwd_inputs,
        _bwd_ref,
        inplace=[6, 7, 8],
        rtol=1e-2,
        atol=1e-3,
    ),
    Case(
        "example_mha_bwd_bhsd.flashattn_bwd-causal",
        _SOURCE,
        "example_mha_bwd_bhsd:flashattn_bwd",
        {**_SIZES, **_BLOCKS, "is_causal": True},
        _bwd_inputs,
        _bwd_ref,
        inplace=[6, 7, 8],
        rtol=1e-2,
        atol=1e-3,
    ),
    Case(
        "example_mha_bwd_bhsd.flashattn_bwd_postprocess",
        _SOURCE,
        "example_mha_bwd_bhsd:flashattn_bwd_postprocess",
        _SIZES,
        _post_inputs,
        _post_ref,
    ),
]
