"""Threads adding into one block-shared element (``T.atomic_add(acc[0], v)``) as one
lane reduction after the thread loop (`thread_accumulations`): the path in
``tl.cpu_thread_path`` and results against numpy on c and llvm, the fallback too."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tvm

import tl_ir.language as T
import tl_runtime
from tl_backend_api import build_artifact, create_backend_context
from tl_codegen_cpu.lowering.thread_lanes import THREAD_PATH_KEY
from tl_codegen_cpu.passes import CpuLowerLaunchPass
from tl_passes import PassContext

TARGETS = ("c", "llvm")
M, K, THREADS = 4, 512, 64


def row_sums(dtype: str, guarded: bool = False) -> Any:
    """Each block sums a row of A: every thread sums its strided slice, then adds it into
    one shared accumulator with an atomic (only the even threads when ``guarded``)."""

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((M,), dtype)):
        with T.Kernel(M, threads=THREADS) as bx:
            tx = T.get_thread_binding(0)
            acc = T.alloc_shared([1], dtype)
            part = T.alloc_local([1], dtype)
            if tx == 0:
                acc[0] = 0
            T.sync_threads()
            part[0] = 0
            for k in T.serial(K // THREADS):
                part[0] += A[bx, k * THREADS + tx]
            if guarded:
                if tx % 2 == 0:
                    T.atomic_add(acc[0], part[0])
            else:
                T.atomic_add(acc[0], part[0])
            T.sync_threads()
            if tx == 0:
                B[bx] = acc[0]

    return main


def _paths(func: Any) -> list[str]:
    mod = tvm.IRModule({"main": func})
    lowered = CpuLowerLaunchPass().run(mod, PassContext(target=tvm.target.Target("c")))
    key = re.escape(THREAD_PATH_KEY)
    text = lowered.script()
    return re.findall(rf'"{key}": "([^"]*)"', text) + re.findall(rf'"{key}", "([^"]*)"', text)


def _run(func: Any, target: str, tmp_path: Path, a: np.ndarray) -> Any:
    context = create_backend_context(target)
    kernel = tl_runtime.load(build_artifact(context, func, tmp_path / target, out_idx=[1]))
    return kernel(a)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_adds_into_one_shared_element_become_one_vector_sum(
    target: str, dtype: str, tmp_path: Path
) -> None:
    func = row_sums(dtype)
    paths = _paths(func)
    assert "lanes: the threads' adds into acc as one vector sum over tx" in paths
    # `if tx == 0: B[bx] = acc[0]` runs for one thread, not 64 tests (thread_ranges).
    assert any(p.endswith("; threads tx < 1 only") for p in paths), paths
    if dtype == "float32":
        # Each thread walks A[k * 64 + tx]: the threads are contiguous lanes inside k
        # (not a strided partial vector along each thread's own k).
        assert any(p.startswith("lanes: threads tx as 64 lanes inside the uniform") for p in paths)
    rng = np.random.default_rng(7)
    if dtype == "int32":
        a = rng.integers(-100, 100, size=(M, K), dtype=np.int32)
        np.testing.assert_array_equal(_run(func, target, tmp_path, a), a.sum(axis=1))
    else:
        a = rng.standard_normal((M, K)).astype(np.float32)
        b = _run(func, target, tmp_path, a)
        np.testing.assert_allclose(b, a.sum(axis=1, dtype=np.float64), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("target", TARGETS)
def test_an_add_under_a_condition_stays_in_the_thread_loop(target: str, tmp_path: Path) -> None:
    func = row_sums("float32", guarded=True)
    assert not any("adds into acc" in p for p in _paths(func))
    a = np.random.default_rng(8).standard_normal((M, K)).astype(np.float32)
    even = a.reshape(M, K // THREADS, THREADS)[:, :, ::2].sum(axis=(1, 2), dtype=np.float64)
    np.testing.assert_allclose(_run(func, target, tmp_path, a), even, rtol=1e-5, atol=1e-4)
