"""An ``if`` whose condition reads shared memory (TileLang's top-k selector finds its
threshold bin with ``if s_histogram[tx] >= k and s_histogram[tx + 1] < k:``) lowers for
CUDA: `gpu-shared-conditions` stores the condition into a local first, since TVM's
barrier planner stops on a shared load in a condition. Checked under the emulation."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cuda_emulation as emu

import tl_ir.language as T

THREADS = 128


def threshold_bin() -> Any:
    """Out[0] = the bin whose suffix count reaches k while the next one's does not."""

    @T.prim_func
    def main(
        Suffix: T.Tensor((THREADS + 1,), "int32"),
        K: T.Tensor((1,), "int32"),
        Out: T.Tensor((1,), "int32"),
    ):
        with T.Kernel(1, threads=THREADS):
            tx = T.get_thread_binding()
            counts = T.alloc_shared([THREADS + 1], "int32")
            found = T.alloc_shared([1], "int32")
            counts[tx] = Suffix[tx]
            if tx == 0:
                counts[THREADS] = Suffix[THREADS]
                found[0] = -1
            T.sync_threads()
            if counts[tx] >= K[0] and counts[tx + 1] < K[0]:
                found[0] = tx
            T.sync_threads()
            if tx == 0:
                Out[0] = found[0]

    return main


def test_the_condition_is_stored_into_a_local_before_the_if() -> None:
    text = emu.lower_for_cuda(threshold_bin()).files["main.cu"]
    assert "cond1_ptr[0] = (" in text and "if (cond1_ptr[0])" in text


@pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")
@pytest.mark.parametrize("k", [1, 37, 500])
def test_the_threshold_bin_matches_numpy(k: int) -> None:
    counts = np.random.default_rng(5).integers(0, 8, THREADS + 1).astype(np.int32)
    counts[THREADS] = 0
    suffix = np.cumsum(counts[::-1])[::-1].astype(np.int32)
    arrays = {"Suffix": suffix, "K": np.array([k], np.int32), "Out": np.zeros(1, np.int32)}
    emu.emulate(threshold_bin(), arrays)
    hits = [t for t in range(THREADS) if suffix[t] >= k and suffix[t + 1] < k]
    assert arrays["Out"][0] == (hits[0] if hits else -1)
