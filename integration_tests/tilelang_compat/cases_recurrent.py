"""Cases from TileLang's recurrent-state examples: the gated delta rule's chunked state
recurrence (``examples/gdn/example_chunk_delta_h.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from integration_tests.tilelang_compat.harness import Arrays, Case


def _f16(x: np.ndarray) -> np.ndarray:
    """``x`` rounded through float16 (a float16 tile), back in float64."""
    return x.astype(np.float16).astype(np.float64)


def _delta_h_inputs(a: dict[str, Any], rng: np.random.Generator) -> Arrays:
    b, s, h, dk, dv, c = a["B"], a["S"], a["H"], a["DK"], a["DV"], a["chunk_size"]
    small = lambda *shape: (rng.standard_normal(shape) / 8).astype(np.float16)  # noqa: E731
    steps = -rng.uniform(0.0, 0.1, (b, s // c, c, h))
    gates = np.cumsum(steps, axis=2).reshape(b, s, h).astype(np.float32)
    return [small(b, s, h, dk), small(b, s, h, dk), small(b, s, h, dv), gates, small(b, h, dk, dv)]


def _delta_h_ref(a: dict[str, Any], k: Any, w: Any, u: Any, g: Any, initial: Any) -> Arrays:
    """Per chunk: the state on entry (float16), ``v_new = u - w @ state`` before the gate,
    then the gated ``v_new`` (float16) updates ``state = exp(g_last) state + k^T v_new``."""
    b, s, h, c = a["B"], a["S"], a["H"], a["chunk_size"]
    n = s // c
    kc, wc, uc = (x.astype(np.float64).reshape(b, n, c, h, -1) for x in (k, w, u))
    gc = g.astype(np.float64).reshape(b, n, c, h)
    state = initial.astype(np.float64)  # (b, h, dk, dv), the float32 fragment
    shared = state.copy()  # the float16 tile the GEMMs and h read
    hidden = np.empty((b, n, h, *state.shape[2:]))
    v_new = np.empty(uc.shape)
    for i in range(n):
        hidden[:, i] = shared
        fresh = uc[:, i] - np.einsum("bchk,bhkv->bchv", wc[:, i], shared)
        v_new[:, i] = fresh
        if a["use_g"]:
            last = gc[:, i, -1, :]  # (b, h)
            decay = last[:, None, :] - gc[:, i]  # (b, c, h)
            fresh = np.where(decay[..., None] <= 0, fresh * np.exp(decay)[..., None], 0)
            state = state * np.exp(last)[:, :, None, None]
        state = state + np.einsum("bchk,bchv->bhkv", kc[:, i], _f16(fresh))
        shared = _f16(state)
    return [
        hidden.astype(np.float16),
        state.astype(np.float32),
        v_new.reshape(u.shape).astype(np.float16),
    ]


_DELTA_H = {
    "B": 1,
    "S": 128,
    "H": 2,
    "DK": 64,
    "DV": 64,
    "input_dtype": "float16",
    "output_dtype": "float16",
    "accum_dtype": "float32",
    "gate_dtype": "float32",
    "state_dtype": "float32",
    "chunk_size": 64,
    "use_g": True,
    "use_initial_state": True,
    "store_final_state": True,
    "save_new_value": True,
    "block_DK": 64,
    "block_DV": 32,
    "threads": 128,
    "num_stages": 1,
}

CASES = [
    Case(
        "example_gdn_chunk_delta_h.tilelang_chunk_gated_delta_rule_fwd_h",
        "examples/gdn/example_chunk_delta_h.py",
        "example_gdn_chunk_delta_h:tilelang_chunk_gated_delta_rule_fwd_h",
        _DELTA_H,
        _delta_h_inputs,
        _delta_h_ref,
        rtol=1e-2,
        atol=1e-3,
    ),
    Case(
        "example_gdn_chunk_delta_h.tilelang_chunk_gated_delta_rule_fwd_h-no-gate",
        "examples/gdn/example_chunk_delta_h.py",
        "example_gdn_chunk_delta_h:tilelang_chunk_gated_delta_rule_fwd_h",
        {**_DELTA_H, "use_g": False},
        _delta_h_inputs,
        _delta_h_ref,
        rtol=1e-2,
        atol=1e-3,
    ),
]
