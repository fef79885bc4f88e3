"""Named barriers (``T.sync_threads(id, count)``) on c and llvm: the suffix sum of
TileLang's top-k selector, where the first ``RADIX`` threads of the block scan a
histogram between named barriers of ``RADIX`` threads; and the cases a CPU refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tl_ir.language as T
import tl_runtime
from tl_backend_api import build_artifact, create_backend_context
from tl_ir.errors import KernelTypeError, UnsupportedError

TARGETS = ("c", "llvm")
THREADS = 64
RADIX = 32  # the threads that scan: a whole number of warps, part of the block


def _run(func: Any, target: str, tmp_path: Path, *arrays: np.ndarray) -> Any:
    context = create_backend_context(target)
    kernel = tl_runtime.load(build_artifact(context, func, tmp_path / target, out_idx=[1]))
    return kernel(*arrays)


def suffix_sum(count: int = RADIX, steps: int = 5) -> Any:
    """TileLang's top-k selector's scan: s[tx] becomes the sum of s[tx:] (Hillis-Steele
    over ``steps`` doublings), by the first RADIX threads only."""

    @T.prim_func
    def main(A: T.Tensor((2, RADIX), "int32"), B: T.Tensor((2, RADIX), "int32")):
        with T.Kernel(2, threads=THREADS) as bx:
            tx = T.get_thread_binding()
            histogram = T.alloc_shared([RADIX + 1], "int32")
            value = T.alloc_var("int32")
            if tx < RADIX:
                histogram[tx] = A[bx, tx]
            if tx == 0:
                histogram[RADIX] = 0
            T.sync_threads()
            if tx < RADIX:
                for i in T.serial(steps):
                    offset = 1 << i
                    T.sync_threads(3, count)
                    if tx < RADIX - offset:
                        value = histogram[tx] + histogram[tx + offset]
                    T.sync_threads(3, count)
                    if tx < RADIX - offset:
                        histogram[tx] = value
                T.sync_threads(3, count)
                B[bx, tx] = histogram[tx]

    return main


@pytest.mark.parametrize("target", TARGETS)
def test_the_top_k_scan_between_named_barriers_sums_each_suffix(
    target: str, tmp_path: Path
) -> None:
    a = np.random.default_rng(0).integers(0, 50, size=(2, RADIX), dtype=np.int32)
    b = _run(suffix_sum(), target, tmp_path, a)
    expected = np.cumsum(a[:, ::-1], axis=1)[:, ::-1]
    np.testing.assert_array_equal(b, expected)


def test_a_count_other_than_the_threads_that_reach_it_is_refused_on_cpu(
    tmp_path: Path,
) -> None:
    # 64 threads would be waited for, 32 arrive: a GPU hangs; a CPU cannot mean it.
    with pytest.raises(UnsupportedError, match=r"T.sync_threads\(3, 64\) is reached by 32"):
        _run(suffix_sum(count=THREADS), "c", tmp_path, np.zeros((2, RADIX), np.int32))


def test_bad_barrier_arguments_name_the_parameter() -> None:
    with pytest.raises(KernelTypeError, match=r"barrier_id must be in 1..15"):
        T.sync_threads(0, 128)
    with pytest.raises(KernelTypeError, match=r"arrive_count must be a positive"):
        T.sync_threads(2, 0)
    with pytest.raises(KernelTypeError, match=r"takes both barrier_id and arrive_count"):
        T.sync_threads(2)
    assert T.sync_threads().op.name == "tirx.tvm_storage_sync"
    assert len(T.sync_threads(3, 128).args) == 3
