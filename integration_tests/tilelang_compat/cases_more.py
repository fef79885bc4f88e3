"""Cases from TileLang's state-space, linear-attention and attention examples added in the
third round (both styles)."""

from __future__ import annotations

from typing import Any

import numpy as np

from integration_tests.tilelang_compat.harness import Arrays, Case


def _chunk_scan_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    b, s, c, g, h = a["batch"], a["seqlen"], a["chunk_size"], a["ngroups"], a["nheads"]
    p, n = a["headdim"], a["dstate"]
    chunks = s // c
    dt = rng.uniform(0.01, 0.1, (b, h, chunks, c))
    half = lambda *shape: (rng.standard_normal(shape) / 4).astype(np.float16)  # noqa: E731
    return [
        half(b, chunks, g, c, c),
        half(b, s, h, p),
        dt.astype(np.float16),
        np.cumsum(-dt, axis=-1).astype(np.float16),
        half(b, s, g, n),
        half(b, chunks, h, p, n),
        half(h),
    ]


def _chunk_scan_ref(
    a: dict[str, Any], cb: Any, x: Any, dt: Any, da: Any, c_: Any, prev: Any, d: Any
) -> Arrays:
    """Mamba-2's chunk scan: the causal, decayed intra-chunk product, the previous state
    read through C (decayed from the chunk start) and the D skip connection."""
    batch, s, c, g, h = a["batch"], a["seqlen"], a["chunk_size"], a["ngroups"], a["nheads"]
    n = s // c
    cb64 = np.repeat(cb.astype(np.float64), h // g, axis=2)  # (b, n, h, l, s)
    c64 = np.repeat(c_.astype(np.float64), h // g, axis=2).reshape(batch, n, c, h, -1)
    da64, dt64 = da.astype(np.float64), dt.astype(np.float64)  # (b, h, n, l)
    decay = np.exp(da64[..., :, None] - da64[..., None, :]).transpose(0, 2, 1, 3, 4)
    scores = np.where(np.tril(np.ones((c, c), bool)), cb64 * decay, 0)
    xc = x.astype(np.float64).reshape(batch, n, c, h, -1)
    intra = np.einsum("bchls,bhcs,bcshp->bclhp", scores, dt64, xc)
    state = np.einsum("bclhn,bchpn->bclhp", c64, prev.astype(np.float64))
    inter = state * np.exp(da64).transpose(0, 2, 3, 1)[..., None]
    out = (intra + inter).reshape(x.shape) + x.astype(np.float64) * d.astype(np.float64)[:, None]
    return [out.astype(np.float16)]


CASES = [
    Case(
        "example_mamba_chunk_scan.chunk_scan_fwd",
        "examples/linear_attention/example_mamba_chunk_scan.py@b9a5907a2",
        "example_mamba_chunk_scan:chunk_scan_fwd",
        {
            "batch": 1,
            "seqlen": 128,
            "chunk_size": 64,
            "ngroups": 1,
            "nheads": 2,
            "headdim": 64,
            "dstate": 64,
            "block_M": 64,
            "block_N": 64,
            "block_K": 64,
            "block_Dstate": 64,
        },
        _chunk_scan_inputs,
        _chunk_scan_ref,
        out_idx=[7],
        rtol=2e-2,
        atol=2e-2,
    ),
]


def _linear_bwd_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    b, s, h, dk, dv = a["B"], a["S"], a["H"], a["DK"], a["DV"]
    half = lambda *shape: (rng.standard_normal(shape) / 2).astype(np.float16)  # noqa: E731
    zeros = lambda d: np.zeros((b, s, h, d), np.float32)  # noqa: E731 (the kernel adds into them)
    return [
        *(half(b, s, h, d) for d in (dk, dk, dv, dv)),
        zeros(dk),
        zeros(dk),
        zeros(dv),
    ]


def _linear_bwd_ref(a: dict[str, Any], q: Any, k: Any, v: Any, do: Any, *_grads: Any) -> Arrays:
    """Gradients of o_t = sum_{s <= t} scale (q_t . k_s) v_s (no decay)."""
    scale = a["DK"] ** -0.5
    q64, k64, v64, do64 = (x.astype(np.float64) for x in (q, k, v, do))
    causal = np.tril(np.ones((q.shape[1], q.shape[1]), bool))  # [t, s]: s <= t
    dov = np.where(causal, np.einsum("bthv,bshv->bhts", do64, v64), 0)
    qk = np.where(causal, np.einsum("bthk,bshk->bhts", q64, k64), 0)
    dq = scale * np.einsum("bhts,bshk->bthk", dov, k64)
    dk = scale * np.einsum("bhts,bthk->bshk", dov, q64)
    dv = scale * np.einsum("bhts,bthv->bshv", qk, do64)
    return [x.astype(np.float32) for x in (dq, dk, dv)]


def _mla_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    b, h, s, d, pe = a["batch"], a["heads"], a["seqlen_kv"], a["dim"], a["pe_dim"]
    half = lambda *shape: rng.standard_normal(shape).astype(np.float16)  # noqa: E731
    return [half(b, h, d), half(b, h, pe), half(b, s, 1, d), half(b, s, 1, pe)]


def _mla_ref(a: dict[str, Any], q: Any, q_pe: Any, kv: Any, k_pe: Any) -> Arrays:
    """Softmax attention of [q, q_pe] against [kv, k_pe] over one shared KV head, values kv."""
    query = np.concatenate([q, q_pe], axis=-1).astype(np.float64)
    key = np.concatenate([kv[:, :, 0], k_pe[:, :, 0]], axis=-1).astype(np.float64)
    scores = np.einsum("bhd,bsd->bhs", query, key) * a["softmax_scale"]
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return [np.einsum("bhs,bsd->bhd", weights, kv[:, :, 0].astype(np.float64)).astype(np.float16)]


def _blocksparse_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    m, n, k = a["M"], a["N"], a["K"]
    mask = rng.uniform(size=(m // a["block_M"], n // a["block_N"], k // a["block_K"])) < 0.5
    mask[0, 0, :] = False  # one output tile with no block at all: written as zeros
    return [
        rng.standard_normal((m, k)).astype(np.float16),
        rng.standard_normal((k, n)).astype(np.float16),
        mask,
    ]


def _blocksparse_ref(a: dict[str, Any], x: Any, y: Any, mask: Any) -> Arrays:
    bm, bn, bk = a["block_M"], a["block_N"], a["block_K"]
    keep = np.repeat(np.repeat(mask, bm, axis=0), bk, axis=2)  # (M, N // bn, K)
    x32, y32 = x.astype(np.float32), y.astype(np.float32)
    out = np.empty((x.shape[0], y.shape[1]), np.float32)
    for j in range(y.shape[1] // bn):
        cols = slice(j * bn, (j + 1) * bn)
        out[:, cols] = np.einsum("mk,kn->mn", np.where(keep[:, j], x32, 0), y32[:, cols])
    return [out.astype(np.float16)]


_MLA = {
    "batch": 1,
    "heads": 64,
    "kv_head_num": 1,
    "seqlen_kv": 256,
    "dim": 64,
    "pe_dim": 32,
    "block_N": 64,
    "block_H": 64,
    "softmax_scale": (64 + 32) ** -0.5,
}

CASES += [
    Case(
        "example_linear_attn_bwd.tl_fused_chunk_bwd_kernel",
        "examples/linear_attention/example_linear_attn_bwd.py@a35008a42",
        "example_linear_attn_bwd:tl_fused_chunk_bwd_kernel",
        {"B": 1, "S": 128, "H": 2, "DK": 64, "DV": 64},
        _linear_bwd_inputs,
        _linear_bwd_ref,
        inplace=[4, 5, 6],
        rtol=2e-2,
        atol=5e-2,
        # Ten tile GEMMs per chunk: compiling it takes about 15 s on c and on llvm.
        tags=frozenset({"slow"}),
    ),
    Case(
        "example_mla_decode.flashattn",
        "examples/deepseek_mla/example_mla_decode.py@a35008a42",
        "example_mla_decode:flashattn",
        {**_MLA, "num_split": 1},
        _mla_inputs,
        _mla_ref,
        rtol=1e-2,
        atol=1e-2,
    ),
    Case(
        "example_mla_decode.flashattn-split",
        "examples/deepseek_mla/example_mla_decode.py@a35008a42",
        "example_mla_decode:flashattn",
        {**_MLA, "num_split": 2},
        _mla_inputs,
        _mla_ref,
        rtol=1e-2,
        atol=1e-2,
    ),
    Case(
        "example_blocksparse_gemm.blocksparse_matmul",
        "examples/blocksparse_gemm/example_blocksparse_gemm.py@a35008a42",
        "example_blocksparse_gemm:blocksparse_matmul",
        {
            "M": 128,
            "N": 128,
            "K": 128,
            "block_M": 64,
            "block_N": 64,
            "block_K": 32,
            "num_stages": 2,
            "thread_num": 128,
            "enable_rasteration": True,
        },
        _blocksparse_inputs,
        _blocksparse_ref,
        out_idx=[3],
        rtol=1e-2,
        atol=1e-2,
    ),
]
