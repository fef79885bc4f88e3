"""Tile copies anchored below 0 on the CUDA lowering, under the CPU emulation: the rows
before the buffer read as zero and are not written, as on the CPU targets, in the
reference interpreter and in TileLang (whose copy predicate tests ``>= 0`` too). The
CUDA lowering tested ``start + i < size`` only: ``T.copy(X[by * 8 - 2, 0], tile)`` read
memory before ``X`` and ``T.copy(tile, Out[1, -2, 0])`` wrote into ``Out[0]``."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cuda_emulation as emu

import tl_ir.language as T
from tl_ir import interpret

pytestmark = pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")


def test_a_load_anchored_below_zero_reads_zeros_there() -> None:
    @T.prim_func
    def shifted(X: T.Tensor((16, 32), "float32"), Out: T.Tensor((16, 32), "float32")):
        with T.Kernel(2, threads=128) as by:
            tile = T.alloc_fragment((8, 32), "float32")
            T.copy(X[by * 8 - 2, 0], tile)
            T.copy(tile, Out[by * 8, 0])

    x = np.arange(1, 16 * 32 + 1, dtype=np.float32).reshape(16, 32)
    backing = np.full((24, 32), 1e28, np.float32)
    backing[8:] = x
    arrays = {"X": backing[8:], "Out": np.full((16, 32), -7, np.float32)}
    emu.emulate(shifted, arrays, name="shifted")
    expected = np.zeros((16, 32), np.float32)
    expected[2:] = x[:14]
    expected[8:] = x[6:14]
    np.testing.assert_array_equal(arrays["Out"], expected)
    reference = np.full((16, 32), -7, np.float32)
    interpret.run(shifted, [x, reference])
    np.testing.assert_array_equal(reference, expected)


def test_a_store_anchored_below_zero_drops_those_rows() -> None:
    @T.prim_func
    def store(X: T.Tensor((16, 32), "float32"), Out: T.Tensor((2, 16, 32), "float32")):
        with T.Kernel(1, threads=128) as _by:
            tile = T.alloc_fragment((8, 32), "float32")
            T.copy(X[0, 0], tile)
            T.copy(tile, Out[1, -2, 0])

    arrays = {"X": np.ones((16, 32), np.float32), "Out": np.zeros((2, 16, 32), np.float32)}
    emu.emulate(store, arrays, name="store")
    expected = np.zeros((2, 16, 32), np.float32)
    expected[1, :6] = 1.0
    np.testing.assert_array_equal(arrays["Out"], expected)
