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
