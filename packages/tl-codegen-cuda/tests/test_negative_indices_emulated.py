"""Negative element indices count from the end of their dim on the CUDA lowering as on
the CPU (integration_tests/test_negative_indices.py): the front end rewrites them for
every target, lane by lane for a vector index of mixed sign."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cuda_emulation as emu

import tl_ir.language as T

pytestmark = pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")


def test_negative_indices_under_emulation() -> None:
    @T.prim_func
    def backwards_and_ramps(
        A: T.Tensor((64,), "float32"), B: T.Tensor((4, 4), "float32"), C: T.Tensor((4,), "float32")
    ):
        with T.Kernel(1, threads=1):
            for t in T.serial(4):
                B[t, T.Ramp(0, 1, 4)] = A[T.Ramp(t - 2, 1, 4)]
                C[t] = A[-t - 1]

    arrays = {
        "A": np.arange(64, dtype=np.float32),
        "B": np.zeros((4, 4), np.float32),
        "C": np.zeros(4, np.float32),
    }
    emu.emulate(backwards_and_ramps, arrays)
    want_b = [[(t - 2 + lane) % 64 for lane in range(4)] for t in range(4)]
    np.testing.assert_array_equal(arrays["B"], want_b)
    np.testing.assert_array_equal(arrays["C"], [63, 62, 61, 60])
