"""A fragment only per-thread code touches holds one copy per thread, as on GPUs.

TileLang gives such a fragment (no tile op, no ``T.Parallel`` loop touches it) a
replicated layout: each thread updates its own copy. The CPU kept one copy per block,
so in a block that runs its threads every thread added into it: four ones summed,
read by thread 0, gave 512 with 128 threads (TileLang's reducer tests, an online
softmax kept in ``(1,)`` fragments, came out wrong the same way).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tl_jit
import tl_jit.language as T

THREADS = 128


def _invariant_sum() -> Any:
    @T.prim_func
    def invariant_sum(A: T.Tensor((4,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=THREADS):
            acc = T.alloc_fragment((1,), "float32")
            acc[0] = 0.0
            for k in T.serial(4):
                acc[0] = acc[0] + A[k]
            if T.get_thread_binding() == 0:
                B[0] = acc[0]

    return invariant_sum


def _own_sums() -> Any:
    @T.prim_func
    def own_sums(A: T.Tensor((THREADS, 4), "float32"), B: T.Tensor((THREADS,), "float32")):
        with T.Kernel(1, threads=THREADS):
            tx = T.get_thread_binding()
            acc = T.alloc_fragment((1,), "float32")
            acc[0] = 0.0
            for k in T.serial(4):
                acc[0] = acc[0] + A[tx, k]
            T.sync_threads()
            B[tx] = acc[0]

    return own_sums


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_a_fragment_updated_by_every_thread_is_each_threads_own(target: str) -> None:
    invariant = tl_jit.compile(_invariant_sum(), out_idx=[-1], target=target)
    np.testing.assert_array_equal(invariant(np.ones(4, np.float32)), [4.0])
    own = tl_jit.compile(_own_sums(), out_idx=[-1], target=target)
    a = np.random.default_rng(2).standard_normal((THREADS, 4)).astype(np.float32)
    want = ((a[:, 0] + a[:, 1]) + a[:, 2]) + a[:, 3]
    np.testing.assert_allclose(own(a), want, rtol=1e-6)


def _filled_then_summed(init: str) -> Any:
    @T.prim_func
    def filled_then_summed(A: T.Tensor((8,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=8):
            acc = T.alloc_fragment((1,), "float32")
            if init == "clear":
                T.clear(acc)
            else:
                T.fill(acc, 0.0)
            for k in T.serial(8):
                acc[0] = acc[0] + A[k]
            if T.get_thread_binding() == 0:
                B[0] = acc[0]

    return filled_then_summed


@pytest.mark.parametrize("target", ["c", "llvm"])
@pytest.mark.parametrize("init", ["clear", "fill"])
def test_a_fragment_cleared_by_a_tile_op_stays_each_threads_own(target: str, init: str) -> None:
    # A fill writes every thread's copy alike, so it keeps the fragment per thread; it
    # made it the block's one copy, which eight threads summed into: 288, not 36.
    kernel = tl_jit.compile(_filled_then_summed(init), out_idx=[-1], target=target)
    np.testing.assert_array_equal(kernel(np.arange(1, 9, dtype=np.float32)), [36.0])
