"""Cases from TileLang's linear-attention and gated-delta-net examples (classic style)."""

from __future__ import annotations

from typing import Any

import numpy as np

from integration_tests.tilelang_compat.harness import Arrays, Case


def _qkv(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    b, s, h = a["B"], a["S"], a["H"]
    return [
        rng.standard_normal((b, s, h, a["DK"])).astype(np.float16),
        rng.standard_normal((b, s, h, a["DK"])).astype(np.float16),
        rng.standard_normal((b, s, h, a["DV"])).astype(np.float16),
    ]


def _decayed_attention(q: Any, k: Any, v: Any, decay: np.ndarray) -> np.ndarray:
    """o_t = sum_{s <= t} decay[h] ** (t - s) (q_t . k_s) v_s, q already scaled (float64)."""
    s = q.shape[1]
    t = np.arange(s)
    distance = t[:, None] - t[None, :]
    scores = np.einsum("bthd,bshd->bhts", q, k)
    weights = np.where(distance >= 0, decay[None, :, None, None] ** np.maximum(distance, 0), 0)
    return np.einsum("bhts,bshd->bthd", scores * weights, v)


def _linear_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    q, k, v = _qkv(a, rng)
    o = np.zeros((a["B"], a["S"], a["H"], a["DV"]), np.float32)  # the kernel adds into O
    return [q, k, v, o]


def _linear_ref(a: dict[str, Any], q: Any, k: Any, v: Any, _o: Any) -> Arrays:
    q64 = q.astype(np.float64) * a["DK"] ** -0.5
    k64, v64 = k.astype(np.float64), v.astype(np.float64)
    out = _decayed_attention(q64, k64, v64, np.ones(a["H"]))
    state = np.einsum("bshk,bshv->bhkv", k64, v64)
    return [state.astype(np.float32), out.astype(np.float32)]


def _retention_ref(a: dict[str, Any], q: Any, k: Any, v: Any) -> Arrays:
    q64 = q.astype(np.float64) * a["DK"] ** -0.5
    decay = 1 - 2.0 ** (-5.0 - np.arange(a["H"]))
    out = _decayed_attention(q64, k.astype(np.float64), v.astype(np.float64), decay)
    return [out[None].astype(np.float16)]


def _kkt_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    b, s, h, c = a["B"], a["S"], a["H"], a["chunk_size"]
    k = (rng.standard_normal((b, s, h, a["DK"])) / 8).astype(np.float16)
    beta = rng.uniform(0.1, 1.0, (b, s, h)).astype(np.float16)
    steps = -rng.uniform(0.0, 0.1, (b, s // c, c, h))
    g = np.cumsum(steps, axis=2).reshape(b, s, h).astype(np.float32)
    return [k, beta, g]


def _kkt_ref(a: dict[str, Any], k: Any, beta: Any, g: Any) -> Arrays:
    b, s, h, c = a["B"], a["S"], a["H"], a["chunk_size"]
    kc = k.astype(np.float64).reshape(b, s // c, c, h, -1)
    bk = (k.astype(np.float32) * beta.astype(np.float32)[..., None]).astype(np.float16)
    bkc = bk.astype(np.float64).reshape(b, s // c, c, h, -1)
    a_ = np.einsum("bnihd,bnjhd->bnihj", bkc, kc)
    lower = np.tril(np.ones((c, c), bool), -1)[None, None, :, None, :]
    if a.get("use_g", True):
        gc = g.astype(np.float64).reshape(b, s // c, c, h)
        diff = gc[:, :, :, :, None] - gc.transpose(0, 1, 3, 2)[:, :, None, :, :]
        keep = lower & (diff <= 0)
        a_ = np.where(keep, a_ * np.exp(np.where(keep, diff, 0)), 0)
    else:
        a_ = np.where(lower, a_, 0)
    return [a_.reshape(b, s, h, c).astype(np.float16)]


_SIZES = {"B": 1, "S": 128, "H": 2, "DK": 64, "DV": 64}
_KKT = {
    "B": 1,
    "S": 128,
    "H": 2,
    "DK": 64,
    "chunk_size": 64,
    "input_dtype": "float16",
    "output_dtype": "float16",
}

CASES = [
    Case(
        "example_linear_attn_fwd.tl_fused_chunk_fwd_kernel",
        "examples/linear_attention/example_linear_attn_fwd.py@3ee0988c8",
        "example_linear_attn_fwd:tl_fused_chunk_fwd_kernel",
        _SIZES,
        _linear_inputs,
        _linear_ref,
        inplace=[3],
        rtol=2e-2,
        atol=5e-2,
    ),
    Case(
        "example_retention_fwd.chunk_retention_fwd_kernel",
        "examples/linear_attention/example_retention_fwd.py@3ee0988c8",
        "example_retention_fwd:chunk_retention_fwd_kernel",
        _SIZES,
        _qkv,
        _retention_ref,
        rtol=2e-2,
        atol=5e-2,
    ),
    Case(
        "example_gdn_chunk_scaled_dot_kkt.tilelang_chunk_scaled_dot_kkt_fwd",
        "examples/gdn/example_chunk_scaled_dot_kkt.py@c871813e6",
        "example_gdn_chunk_scaled_dot_kkt:tilelang_chunk_scaled_dot_kkt_fwd",
        _KKT,
        _kkt_inputs,
        _kkt_ref,
        rtol=1e-2,
        atol=1e-2,
    ),
    Case(
        "example_gdn_chunk_scaled_dot_kkt.tilelang_chunk_scaled_dot_kkt_fwd-no-gate",
        "examples/gdn/example_chunk_scaled_dot_kkt.py@c871813e6",
        "example_gdn_chunk_scaled_dot_kkt:tilelang_chunk_scaled_dot_kkt_fwd",
        {**_KKT, "use_g": False},
        _kkt_inputs,
        _kkt_ref,
        rtol=1e-2,
        atol=1e-2,
    ),
]


def _gates(rng: np.random.Generator, b: int, s: int, h: int, c: int) -> np.ndarray:
    """Per-chunk cumulative log gates (non-increasing within each chunk)."""
    steps = -rng.uniform(0.0, 0.1, (b, s // c, c, h))
    return np.cumsum(steps, axis=2).reshape(b, s, h).astype(np.float32)


def _chunk_o_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    b, s, h, dk, dv, c = a["B"], a["S"], a["H"], a["DK"], a["DV"], a["chunk_size"]
    small = lambda *shape: (rng.standard_normal(shape) / 4).astype(np.float16)  # noqa: E731
    return [
        small(b, s, h, dk),
        small(b, s, h, dk),
        small(b, s, h, dv),
        small(b, s // c, h, dk, dv),
        _gates(rng, b, s, h, c),
    ]


def _chunk_o_ref(a: dict[str, Any], q: Any, k: Any, v: Any, hidden: Any, g: Any) -> Arrays:
    b, s, h, c = a["B"], a["S"], a["H"], a["chunk_size"]
    n = s // c
    qc, kc, vc = (x.astype(np.float64).reshape(b, n, c, h, -1) for x in (q, k, v))
    gc = g.astype(np.float64).reshape(b, n, c, h)
    inter = np.einsum("bnihk,bnhkv->bnihv", qc, hidden.astype(np.float64))
    scores = np.einsum("bnihk,bnjhk->bnhij", qc, kc)
    if a["use_g"]:
        inter = inter * np.exp(gc)[..., None]
        diff = gc.transpose(0, 1, 3, 2)[..., :, None] - gc.transpose(0, 1, 3, 2)[..., None, :]
        scores = np.where(diff <= 0, scores * np.exp(np.minimum(diff, 0)), 0)
    scores = np.where(np.tril(np.ones((c, c), bool)), scores, 0)
    scores = scores.astype(np.float16).astype(np.float64)  # A goes through an fp16 tile
    intra = np.einsum("bnhij,bnjhv->bnihv", scores, vc)
    return [((inter + intra) * a["scale"]).reshape(b, s, h, -1).astype(np.float16)]


def _wy_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    b, s, h, dk, dv, c = a["B"], a["S"], a["H"], a["DK"], a["DV"], a["chunk_size"]
    lower = np.tril(rng.standard_normal((b, s // c, h, c, c)) / 8)
    return [
        (rng.standard_normal((b, s, h, dk)) / 4).astype(np.float16),
        (rng.standard_normal((b, s, h, dv)) / 4).astype(np.float16),
        rng.uniform(0.1, 1.0, (b, s, h)).astype(np.float16),
        _gates(rng, b, s, h, c),
        lower.transpose(0, 1, 3, 2, 4).reshape(b, s, h, c).astype(np.float16),
    ]


def _wy_ref(a: dict[str, Any], k: Any, v: Any, beta: Any, g: Any, a_: Any) -> Arrays:
    b, s, h, c = a["B"], a["S"], a["H"], a["chunk_size"]
    n = s // c
    mat = a_.astype(np.float64).reshape(b, n, c, h, c)
    beta32 = beta.astype(np.float32)[..., None]
    u_in = (v.astype(np.float32) * beta32).astype(np.float16)
    w_in = (k.astype(np.float32) * beta32 * np.exp(g)[..., None]).astype(np.float16)
    u = np.einsum("bnihj,bnjhv->bnihv", mat, u_in.astype(np.float64).reshape(b, n, c, h, -1))
    w = np.einsum("bnihj,bnjhv->bnihv", mat, w_in.astype(np.float64).reshape(b, n, c, h, -1))
    return [w.reshape(k.shape).astype(np.float16), u.reshape(v.shape).astype(np.float16)]


_GDN = {
    "B": 1,
    "S": 128,
    "H": 2,
    "DK": 64,
    "DV": 64,
    "input_dtype": "float16",
    "output_dtype": "float16",
    "accum_dtype": "float32",
    "gate_dtype": "float32",
    "chunk_size": 64,
}

CASES += [
    Case(
        "example_gdn_chunk_o.tilelang_chunk_fwd_o",
        "examples/gdn/example_chunk_o.py",
        "example_gdn_chunk_o:tilelang_chunk_fwd_o",
        {**_GDN, "scale": 0.125, "use_g": True},
        _chunk_o_inputs,
        _chunk_o_ref,
        rtol=1e-2,
        atol=1e-2,
    ),
    Case(
        "example_gdn_chunk_o.tilelang_chunk_fwd_o-no-gate",
        "examples/gdn/example_chunk_o.py",
        "example_gdn_chunk_o:tilelang_chunk_fwd_o",
        {**_GDN, "scale": 0.125, "use_g": False},
        _chunk_o_inputs,
        _chunk_o_ref,
        rtol=1e-2,
        atol=1e-2,
    ),
    Case(
        "example_gdn_wy_fast.tilelang_recompute_w_u_fwd",
        "examples/gdn/example_wy_fast.py",
        "example_gdn_wy_fast:tilelang_recompute_w_u_fwd",
        _GDN,
        _wy_inputs,
        _wy_ref,
        rtol=1e-2,
        atol=1e-2,
    ),
]
