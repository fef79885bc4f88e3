"""Cases from TileLang's examples/ written in the eager style (``T.const``/``T.empty``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from integration_tests.tilelang_compat.harness import Arrays, Case


def _gemm_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    return [
        rng.standard_normal((a["M"], a["K"])).astype(np.float16),
        rng.standard_normal((a["K"], a["N"])).astype(np.float16),
    ]


def _gemm_ref(a: dict[str, Any], x: np.ndarray, y: np.ndarray) -> Arrays:
    return [(x.astype(np.float32) @ y.astype(np.float32)).astype(np.float16)]


_PERSISTENT_SOURCE = "examples/gemm/example_gemm_persistent.py"
# The hand-written tile loop visits every tile only when the N-tile count is a multiple
# of its group size (8): (tile_id // 8) % m_blocks, tile_id % 8 + ... maps tile ids past
# m_blocks * n_blocks onto real tiles otherwise, and those tiles of the T.empty output
# are never written. These sizes (8 N-tiles) are ones the example is correct for.
_PERSISTENT = {
    "M": 128,
    "N": 256,
    "K": 64,
    "block_M": 64,
    "block_N": 32,
    "block_K": 32,
    "threads": 128,
    "num_stages": 2,
}

CASES = [
    Case(
        "example_gemm_persistent.matmul_persistent",
        _PERSISTENT_SOURCE,
        "example_gemm_persistent:matmul_persistent",
        _PERSISTENT,
        _gemm_inputs,
        _gemm_ref,
        out_idx=[2],
        rtol=1e-2,
        atol=1e-2,
    ),
    Case(
        "example_gemm_persistent.matmul_persistent-tile-loop",
        _PERSISTENT_SOURCE,
        "example_gemm_persistent:matmul_persistent",
        {**_PERSISTENT, "use_persistent_primitive": False},
        _gemm_inputs,
        _gemm_ref,
        out_idx=[2],
        rtol=1e-2,
        atol=1e-2,
    ),
    Case(
        "example_gemm_persistent.matmul_non_persistent",
        _PERSISTENT_SOURCE,
        "example_gemm_persistent:matmul_non_persistent",
        _PERSISTENT,
        _gemm_inputs,
        _gemm_ref,
        out_idx=[2],
        rtol=1e-2,
        atol=1e-2,
    ),
]


def _chunk_state_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    b, s, c, g, h = a["batch"], a["seqlen"], a["chunk_size"], a["ngroups"], a["nheads"]
    n = s // c
    dt = rng.uniform(0.01, 0.1, (b, h, n, c))
    return [
        rng.standard_normal((b, s, g, a["dstate"])).astype(np.float16),
        rng.standard_normal((b, s, h, a["headdim"])).astype(np.float16),
        dt.astype(np.float16),
        np.cumsum(-dt, axis=-1).astype(np.float16),
    ]


def _chunk_state_ref(a: dict[str, Any], b_: Any, x: Any, dt: Any, da: Any) -> Arrays:
    batch, s, c, g, h = a["batch"], a["seqlen"], a["chunk_size"], a["ngroups"], a["nheads"]
    n = s // c
    bb = np.repeat(b_.astype(np.float64), h // g, axis=2).reshape(batch, n, c, h, -1)
    xx = x.astype(np.float64).reshape(batch, n, c, h, -1)
    da64 = da.astype(np.float64)
    decay = np.exp(da64[..., -1:] - da64)  # (batch, heads, chunks, chunk)
    weight = decay * dt.astype(np.float64)
    return [np.einsum("bclhn,bhcl,bclhp->bchpn", bb, weight, xx).astype(np.float16)]


CASES.append(
    Case(
        "example_mamba_chunk_state.chunk_state_fwd",
        "examples/linear_attention/example_mamba_chunk_state.py@b9a5907a2",
        "example_mamba_chunk_state:chunk_state_fwd",
        {
            "batch": 1,
            "seqlen": 128,
            "chunk_size": 64,
            "ngroups": 1,
            "nheads": 2,
            "headdim": 64,
            "dstate": 64,
        },
        _chunk_state_inputs,
        _chunk_state_ref,
        out_idx=[4],
        rtol=2e-2,
        atol=2e-2,
    )
)


def _relu_ref(a: dict[str, Any], x: np.ndarray, y: np.ndarray) -> Arrays:
    return [np.maximum(x.astype(np.float32) @ y.astype(np.float32), 0).astype(np.float16)]


def _splitk_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    return [*_gemm_inputs(a, rng), np.zeros((a["M"], a["N"]), np.float32)]


def _splitk_ref(a: dict[str, Any], x: np.ndarray, y: np.ndarray, _c: np.ndarray) -> Arrays:
    return [x.astype(np.float32) @ y.astype(np.float32)]


def _dynamic_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    m, n, k = a["sizes"]
    x = rng.standard_normal((k, m) if a["trans_A"] else (m, k)).astype(np.float16)
    y = rng.standard_normal((n, k) if a["trans_B"] else (k, n)).astype(np.float16)
    return [x, y]


def _dynamic_ref(a: dict[str, Any], x: np.ndarray, y: np.ndarray) -> Arrays:
    x32 = x.astype(np.float32).T if a["trans_A"] else x.astype(np.float32)
    y32 = y.astype(np.float32).T if a["trans_B"] else y.astype(np.float32)
    return [(x32 @ y32).astype(np.float16)]


_GEMM = {"M": 128, "N": 128, "K": 64, "block_M": 64, "block_N": 64, "block_K": 32}
_DYNAMIC = {
    "block_M": 64,
    "block_N": 64,
    "block_K": 32,
    "in_dtype": "float16",
    "out_dtype": "float16",
    "accum_dtype": "float32",
    "num_stages": 2,
    "threads": 128,
}
_DYNAMIC_SOURCE = "examples/dynamic_shape/example_dynamic.py@b9a5907a2"


class _DynamicCase(Case):
    """A dynamic-shape GEMM: ``sizes`` (M, N, K) shape the inputs, not the kernel."""

    def build(self, **overrides: Any) -> tuple[Any, list[int] | None]:
        args = {k: v for k, v in {**self.args, **overrides}.items() if k != "sizes"}
        out_idx = None if self.out_idx is None else list(self.out_idx)
        return self.function().get_prim_func(**args), out_idx


CASES += [
    Case(
        "example_quickstart.matmul",
        "examples/quickstart.py@b9a5907a2",
        "example_quickstart:matmul",
        _GEMM,
        _gemm_inputs,
        _relu_ref,
        out_idx=[2],
        rtol=1e-2,
        atol=1e-2,
    ),
    Case(
        "example_gemm.matmul",
        "examples/gemm/example_gemm.py@b9a5907a2",
        "example_gemm:matmul",
        _GEMM,
        _gemm_inputs,
        _gemm_ref,
        out_idx=[2],
        rtol=1e-2,
        atol=1e-2,
    ),
    Case(
        "example_gemm_splitk_vectorize_atomicadd.matmul",
        "examples/gemm_splitk/example_tilelang_gemm_splitk_vectorize_atomicadd.py@b9a5907a2",
        "example_gemm_splitk_vectorize_atomicadd:matmul",
        {**_GEMM, "K": 128, "split_k": 2},
        _splitk_inputs,
        _splitk_ref,
        inplace=[2],
        rtol=1e-3,
        atol=1e-3,
    ),
    *(
        _DynamicCase(
            f"example_dynamic.matmul_dynamic_mnk-{'t' if ta else 'n'}{'t' if tb else 'n'}",
            _DYNAMIC_SOURCE,
            "example_dynamic:matmul_dynamic_mnk",
            {**_DYNAMIC, "trans_A": ta, "trans_B": tb, "sizes": (96, 160, 80)},
            _dynamic_inputs,
            _dynamic_ref,
            out_idx=[2],
            rtol=1e-2,
            atol=1e-2,
        )
        for ta, tb in ((False, False), (True, False), (False, True))
    ),
]
