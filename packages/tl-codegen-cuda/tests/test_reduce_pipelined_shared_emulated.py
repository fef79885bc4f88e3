"""``T.reduce_sum/max/absmax`` of a shared tile that ``T.copy`` fills inside
``T.Pipelined(num_stages >= 2)``, lowered for CUDA and run under the CPU emulation.

The copy makes the tile a cp.async ring (`tl_passes.gpu.pipelined_ring`): the reduce's
source region gains a leading unit stage dim, which the lowering once took for a source
dim (a raw ``zip()`` ValueError building the destination index). Every kind reduces each
tile along dim 1 (rows) and dim 0 (columns), with ``clear=False`` straight into the
accumulator and with ``clear=True`` into a temporary folded into it, accumulated across
the iterations; one kernel per stage count holds all twelve reductions (plus one into a
keepdim destination), compared against numpy.
"""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cuda_emulation as emu

import tl_jit.language as T

pytestmark = pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")

M, K, BK, THREADS = 16, 128, 32, 64
KINDS = ("sum", "max", "absmax")


def _kernel(stages: int) -> Any:
    f32 = "float32"
    neg_inf = -T.infinity(f32)

    @T.prim_func
    def main(
        A: T.Tensor((M, K), f32),
        Rows: T.Tensor((6, M), f32),
        Cols: T.Tensor((6, BK), f32),
        Keep: T.Tensor((M, 1), f32),
    ):
        with T.Kernel(1, threads=THREADS) as _:
            S = T.alloc_shared((M, BK), f32)
            # dim 1 (one value per row): clear=False into r*, clear=True via tr*
            r_sum = T.alloc_fragment((M,), f32)
            r_max = T.alloc_fragment((M,), f32)
            r_abs = T.alloc_fragment((M,), f32)
            rc_sum = T.alloc_fragment((M,), f32)
            rc_max = T.alloc_fragment((M,), f32)
            rc_abs = T.alloc_fragment((M,), f32)
            tr = T.alloc_fragment((M,), f32)
            # dim 0 (one value per column of the tile), the same way
            c_sum = T.alloc_fragment((BK,), f32)
            c_max = T.alloc_fragment((BK,), f32)
            c_abs = T.alloc_fragment((BK,), f32)
            cc_sum = T.alloc_fragment((BK,), f32)
            cc_max = T.alloc_fragment((BK,), f32)
            cc_abs = T.alloc_fragment((BK,), f32)
            tc = T.alloc_fragment((BK,), f32)
            keep = T.alloc_fragment((M, 1), f32)
            T.clear(r_sum)
            T.fill(r_max, neg_inf)
            T.clear(r_abs)
            T.clear(rc_sum)
            T.fill(rc_max, neg_inf)
            T.clear(rc_abs)
            T.clear(c_sum)
            T.fill(c_max, neg_inf)
            T.clear(c_abs)
            T.clear(cc_sum)
            T.fill(cc_max, neg_inf)
            T.clear(cc_abs)
            T.clear(keep)
            for ko in T.Pipelined(K // BK, num_stages=stages):
                T.copy(A[0, ko * BK], S)
                T.reduce_sum(S, r_sum, dim=1, clear=False)
                T.reduce_max(S, r_max, dim=1, clear=False)
                T.reduce_absmax(S, r_abs, dim=1, clear=False)
                T.reduce_sum(S, c_sum, dim=0, clear=False)
                T.reduce_max(S, c_max, dim=0, clear=False)
                T.reduce_absmax(S, c_abs, dim=0, clear=False)
                T.reduce_sum(S, keep, dim=1, clear=False)
                T.reduce_sum(S, tr, dim=1, clear=True)
                for i in T.Parallel(M):
                    rc_sum[i] += tr[i]
                T.reduce_max(S, tr, dim=1, clear=True)
                for i in T.Parallel(M):
                    rc_max[i] = T.max(rc_max[i], tr[i])
                T.reduce_absmax(S, tr, dim=1, clear=True)
                for i in T.Parallel(M):
                    rc_abs[i] = T.max(rc_abs[i], tr[i])
                T.reduce_sum(S, tc, dim=0, clear=True)
                for j in T.Parallel(BK):
                    cc_sum[j] += tc[j]
                T.reduce_max(S, tc, dim=0, clear=True)
                for j in T.Parallel(BK):
                    cc_max[j] = T.max(cc_max[j], tc[j])
                T.reduce_absmax(S, tc, dim=0, clear=True)
                for j in T.Parallel(BK):
                    cc_abs[j] = T.max(cc_abs[j], tc[j])
            T.copy(r_sum, Rows[0, 0])
            T.copy(r_max, Rows[1, 0])
            T.copy(r_abs, Rows[2, 0])
            T.copy(rc_sum, Rows[3, 0])
            T.copy(rc_max, Rows[4, 0])
            T.copy(rc_abs, Rows[5, 0])
            T.copy(c_sum, Cols[0, 0])
            T.copy(c_max, Cols[1, 0])
            T.copy(c_abs, Cols[2, 0])
            T.copy(cc_sum, Cols[3, 0])
            T.copy(cc_max, Cols[4, 0])
            T.copy(cc_abs, Cols[5, 0])
            T.copy(keep, Keep)

    return main


def _fold(values: np.ndarray, kind: str, axis: tuple[int, ...]) -> np.ndarray:
    if kind == "sum":
        return values.sum(axis=axis)
    if kind == "max":
        return values.max(axis=axis)
    return np.abs(values).max(axis=axis)


@cache
def _run(stages: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    a = np.random.default_rng(stages).standard_normal((M, K)).astype(np.float32)
    arrays = {
        "A": a,
        "Rows": np.zeros((6, M), np.float32),
        "Cols": np.zeros((6, BK), np.float32),
        "Keep": np.zeros((M, 1), np.float32),
    }
    sources = emu.emulate(_kernel(stages), arrays)
    # The tile is a cp.async ring: the stage dim the fix is about is there.
    assert "cp.async" in sources.files["main.cu"]
    return a.astype(np.float64), arrays


@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("clear", [False, True])
def test_pipelined_shared_reduce(stages: int, kind: str, clear: bool) -> None:
    a, arrays = _run(stages)
    slot = KINDS.index(kind) + (3 if clear else 0)
    tiles = a.reshape(M, K // BK, BK)
    np.testing.assert_allclose(arrays["Rows"][slot], _fold(a, kind, (1,)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        arrays["Cols"][slot], _fold(tiles, kind, (0, 1)), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize("stages", [2, 3])
def test_pipelined_shared_reduce_keepdim(stages: int) -> None:
    a, arrays = _run(stages)
    np.testing.assert_allclose(arrays["Keep"], a.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-5)
