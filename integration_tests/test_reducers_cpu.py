"""Reducers on the CPU combine every contribution exactly once, as TileLang's do.

TileLang's ``test_scalar_sum_regression_36_not_576`` (reducer_v2) states the rule: how
a loop is spread over a block's threads must not change how often a contribution is
counted. A ``T.Parallel`` loop of reducer updates reading global memory (no fragment)
ran once per thread in a block that runs its threads: the sum of eight ones read 1024
with 128 threads, in the v2 form (``T.reducer_update``) and the legacy one
(``acc[0] += A[i]``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tl_jit
import tl_jit.language as T

TARGETS = ("c", "llvm")
THREADS = 128


def _v2_sum_of_global(n: int) -> Any:
    @T.prim_func
    def v2_sum_of_global(A: T.Tensor((n,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=THREADS):
            acc = T.alloc_reducer((1,), "float32", op="sum")
            T.reducer_init(acc)
            for i in T.Parallel(n):
                T.reducer_update(acc[0], A[i])
            result = T.alloc_fragment((1,), "float32")
            T.finalize_reducer(acc, result)
            if T.get_thread_binding() == 0:
                B[0] = result[0]

    return v2_sum_of_global


def _legacy_sum_of_global(n: int) -> Any:
    @T.prim_func
    def legacy_sum_of_global(A: T.Tensor((n,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=THREADS):
            acc = T.alloc_reducer((1,), "float32", replication="all")
            T.clear(acc)
            for i in T.Parallel(n):
                acc[0] += A[i]
            T.finalize_reducer(acc)
            if T.get_thread_binding() == 0:
                B[0] = acc[0]

    return legacy_sum_of_global


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [8, 256])
@pytest.mark.parametrize("form", ["v2", "legacy"])
def test_reducer_updates_reading_global_memory_count_once(target: str, n: int, form: str) -> None:
    make = _v2_sum_of_global if form == "v2" else _legacy_sum_of_global
    kernel = tl_jit.compile(make(n), out_idx=[-1], target=target)
    a = np.arange(1, n + 1, dtype=np.float32)
    np.testing.assert_array_equal(kernel(a), [a.sum()])


def _legacy_sum_of_fragment(extent: int, threads: int) -> Any:
    # TileLang's test_finalize_reducer_short_parallel_extent: cpu-forward-copies took the
    # T.clear of the reducer with the forwarded copy of A, so the sum started from
    # uninitialized memory (NaN on llvm; c right only when its stack slot held 0).
    @T.prim_func
    def legacy_sum_of_fragment(A: T.Tensor((extent,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((extent,), "float32")
            T.copy(A, src)
            total = T.alloc_reducer((1,), "float32", replication="all")
            T.clear(total)
            for i in T.Parallel(extent):
                total[0] += src[i]
            T.finalize_reducer(total)
            if T.get_thread_binding() == 0:
                B[0] = total[0]

    return legacy_sum_of_fragment


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("extent", "threads"), [(8, 8), (8, 128), (256, 128)])
def test_a_cleared_legacy_reducer_after_a_copy_to_a_fragment_starts_from_zero(
    target: str, extent: int, threads: int
) -> None:
    kernel = tl_jit.compile(_legacy_sum_of_fragment(extent, threads), out_idx=[-1], target=target)
    a = np.arange(1, extent + 1, dtype=np.float32)
    for _ in range(3):
        np.testing.assert_array_equal(kernel(a), [a.sum()])
