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
