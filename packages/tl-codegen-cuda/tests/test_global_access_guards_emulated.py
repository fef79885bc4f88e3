"""Global element accesses guarded by their buffer's bounds on the CUDA lowering, under
the CPU emulation (integration_tests/test_global_access_guards.py): the last block of a
grid rounded up to the block size stored past the end of its output."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cuda_emulation as emu

import tl_ir.language as T

pytestmark = pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")


def _padded_blocks() -> Any:
    @T.prim_func
    def padded_blocks(A: T.Tensor((40,), "float32"), C: T.Tensor((40,), "float32")):
        with T.Kernel(T.ceildiv(40, 16), threads=32) as bx:
            for i in T.Parallel(16):
                C[bx * 16 + i] = A[bx * 16 + i + 1] + 1.0

    return padded_blocks


def test_a_grid_rounded_up_to_the_block_stays_inside_its_buffers() -> None:
    a_backing = np.full(64, 1000.0, np.float32)
    a_backing[:40] = np.arange(40, dtype=np.float32)
    c_backing = np.full(64, -7.0, np.float32)
    arrays = {"A": a_backing[:40], "C": c_backing[:40]}
    emu.emulate(_padded_blocks(), arrays, name="padded_blocks")
    expected = np.append(np.arange(1, 40, dtype=np.float32), 0.0) + 1.0
    np.testing.assert_array_equal(c_backing[:40], expected)
    np.testing.assert_array_equal(c_backing[40:], -7.0)
