"""T.cumsum across source/destination scopes, lowered for CUDA and run under the CPU
emulation: a shared source scanned into a (replicated) fragment destination must leave
the whole result in every thread's copy, like shared->shared (the control)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cuda_emulation as emu

import tl_ir.language as T

needs_gxx = pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")

SHAPES = [((8, 8), 32), ((16, 4), 64)]


def _kernel(shape: tuple[int, int], threads: int, dim: int, reverse: bool, to_fragment: bool):  # type: ignore[no-untyped-def]
    @T.prim_func
    def main(X: T.Tensor(shape, "float32"), Out: T.Tensor(shape, "float32")):
        with T.Kernel(1, threads=threads) as _bx:
            src = T.alloc_shared(shape, "float32")
            T.copy(X, src)
            if to_fragment:
                frag = T.alloc_fragment(shape, "float32")
                T.cumsum(src, frag, dim=dim, reverse=reverse)
                T.copy(frag, Out)
            else:
                dst = T.alloc_shared(shape, "float32")
                T.cumsum(src, dst, dim=dim, reverse=reverse)
                T.copy(dst, Out)

    return main


@needs_gxx
@pytest.mark.parametrize(("shape", "threads"), SHAPES)
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize(
    "to_fragment", [True, False], ids=["shared_to_fragment", "shared_to_shared"]
)
def test_cumsum_from_shared_runs_correctly_under_emulation(
    shape: tuple[int, int], threads: int, dim: int, reverse: bool, to_fragment: bool
) -> None:
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) % 7 - 3
    arrays = {"X": x, "Out": np.full(shape, np.nan, dtype=np.float32)}
    emu.emulate(_kernel(shape, threads, dim, reverse, to_fragment), arrays)
    if reverse:
        expected = np.flip(np.cumsum(np.flip(x, dim), axis=dim), dim)
    else:
        expected = np.cumsum(x, axis=dim)
    np.testing.assert_array_equal(arrays["Out"], expected)


def test_a_scan_of_a_tile_in_a_pipelined_ring() -> None:
    """A shared tile filled inside ``T.Pipelined(num_stages=2)`` gains the ring's stage
    dim: the scan paired the source's index with the destination's dims one for one
    and failed with a raw ``zip()`` ValueError."""

    @T.prim_func
    def ring_scan(X: T.Tensor((8, 64), "float32"), Y: T.Tensor((8, 64), "float32")):
        with T.Kernel(1, threads=32) as _by:
            S = T.alloc_shared((8, 32), "float32")
            F = T.alloc_fragment((8, 32), "float32")
            for ko in T.Pipelined(2, num_stages=2):
                T.copy(X[0, ko * 32], S)
                T.cumsum(S, F, dim=1)
                T.copy(F, Y[0, ko * 32])

    x = np.random.default_rng(0).standard_normal((8, 64)).astype(np.float32)
    arrays = {"X": x, "Y": np.full((8, 64), np.nan, np.float32)}
    emu.emulate(ring_scan, arrays, name="ring_scan")
    expected = np.concatenate([np.cumsum(x[:, :32], 1), np.cumsum(x[:, 32:], 1)], 1)
    np.testing.assert_allclose(arrays["Y"], expected, rtol=1e-5, atol=1e-5)
