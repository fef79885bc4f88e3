"""Run-time tile extents with a compile-time bound on both sides of a copy
(global -> global, into a sliced shared tile, out of a sliced fragment) and in
``T.fill`` / ``T.clear`` of a region (tl_ir.run_time_tiles) compute what numpy does on
c and llvm for a ragged last block, all rows, none and one block, as do scans
(``T.cumsum`` / ``T.cummax``) over a bounded run-time region; tile ops that keep
constant extents (``T.reduce_*``), and scans over a region without a bound, refuse a
run-time one saying what to write
(test_tile_extent_folding: a copy whose extents have no bound).
The CUDA tests (tl-codegen-cuda/tests/test_run_time_tiles_cuda.py) run the same
kernels."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import tl_ir
import tl_ir.language as T
import tl_jit
from integration_tests.run_time_tile_kernels import CASES, LENGTHS, inputs, outputs_before
from tl_ir.errors import UnsupportedError


@pytest.mark.parametrize("target", ["c", "llvm"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_bounded_run_time_extent_computes_what_numpy_does(name: str, target: str) -> None:
    build, outputs, expected = CASES[name]
    func = build()
    assert re.search(r"if (\S+ \+ )?tile_i0 < ", tl_ir.format_ir(func))  # a guarded loop
    kernel = tl_jit.compile(func, target=target)
    a = inputs()
    for length in LENGTHS:
        results = outputs_before(len(outputs))
        wanted = expected(a, length, *[r.copy() for r in results])
        kernel(a, np.array([length], np.int32), *results)
        for got, want, output in zip(results, wanted, outputs, strict=True):
            np.testing.assert_array_equal(got, want, err_msg=f"{name} {output} L={length}")


@pytest.mark.parametrize("target", ["c", "llvm"])
@pytest.mark.parametrize("name", ["global_to_global", "fragment_to_global", "into_sliced_shared"])
def test_a_slice_end_far_below_its_start_copies_nothing(name: str, target: str) -> None:
    # e = T.min(s + block, L[0]) with L[0] = -2**31: the slice A[s:e] is empty, but its
    # extent e - s wraps around in int32 to a large positive count, and the guard
    # tile_i0 < e - s copied every row of the blocks past the first (c and llvm).
    build, outputs, expected = CASES[name]
    kernel = tl_jit.compile(build(), target=target)
    a = inputs()
    for length in (-(2**31), -(2**31) + 5, 2**31 - 1):
        results = outputs_before(len(outputs))
        wanted = expected(a, length, *[r.copy() for r in results])
        kernel(a, np.array([length], np.int32), *results)
        for got, want in zip(results, wanted, strict=True):
            np.testing.assert_array_equal(got, want, err_msg=f"{name} L={length}")


def reduce_of_a_run_time_region(N: int = 16) -> Any:
    @T.prim_func
    def main(
        A: T.Tensor((N, 8), "float32"), L: T.Tensor((1,), "int32"), Out: T.Tensor((8,), "float32")
    ):
        with T.Kernel(1, threads=32) as _bx:
            S = T.alloc_shared((N, 8), "float32")
            R = T.alloc_fragment((8,), "float32")
            T.copy(A, S)
            n = T.min(L[0], N)
            T.reduce_sum(S[0:n, :], R, dim=0)
            T.copy(R, Out)

    return main


def test_a_reduction_over_a_run_time_region_says_what_to_write() -> None:
    with pytest.raises(UnsupportedError, match=r"T\.reduce.*whole tile"):
        tl_jit.compile(reduce_of_a_run_time_region(), target="c")


def cumsum_of_an_unbounded_region() -> Any:
    n = T.symbolic("n")

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), L: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=32) as _bx:
            T.cumsum(A[0 : L[0]], dim=0)

    return main


def test_a_scan_over_an_unbounded_run_time_region_says_what_to_write() -> None:
    # A region of a tensor of symbolic size with a run-time extent: no bound to size
    # the scratch tile by (the bounded ones are CASES scan_rows / reverse_max_rows).
    with pytest.raises(UnsupportedError, match=r"T\.cumsum.*no compile-time upper bound.*bound it"):
        tl_jit.compile(cumsum_of_an_unbounded_region(), target="c")
