"""Profiler: do_bench modes and validation, generated inputs, assert_allclose."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

import tl_jit
from tl_jit.profiler import do_bench


def test_do_bench_modes_and_quantiles() -> None:
    def sleepy() -> None:
        time.sleep(0.001)

    mean = do_bench(sleepy, warmup=1, rep=10)
    assert isinstance(mean, float) and 0.9 < mean < 50
    low, high = do_bench(sleepy, warmup=0, rep=10, quantiles=[0.1, 0.9])  # type: ignore[misc]
    assert low <= high
    minimum = do_bench(sleepy, warmup=0, rep=10, return_mode="min")
    maximum = do_bench(sleepy, warmup=0, rep=10, return_mode="max")
    assert isinstance(minimum, float) and isinstance(maximum, float) and minimum <= maximum
    assert isinstance(do_bench(lambda: None, rep=1, flush_cache=True), float)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"return_mode": "average"}, "return_mode"),
        ({"rep": 0}, "rep"),
        ({"warmup": -1}, "warmup"),
        ({"quantiles": [1.5]}, "quantiles"),
        ({"device": "tpu"}, "device"),
    ],
)
def test_do_bench_rejects_bad_options(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        do_bench(lambda: None, **kwargs)


def test_kernel_profiler(fake_backend: Any) -> None:
    kernel = tl_jit.compile(fake_backend.vadd, out_idx=[-1], target="llvm")
    profiler = kernel.get_profiler()
    inputs = profiler.make_inputs()
    assert [a.shape for a in inputs] == [(1024,), (1024,)]
    assert isinstance(profiler.do_bench(warmup=1, rep=5), float)
    profiler.assert_allclose(lambda a, b: a + b, rtol=1e-6, atol=1e-6)
    with pytest.raises(AssertionError, match="output 0 differs"):
        profiler.assert_allclose(lambda a, b: a - b)


def test_symbolic_dims_need_sizes(fake_backend: Any) -> None:
    kernel = tl_jit.compile(fake_backend.vadd_n, out_idx=[-1], target="llvm")
    with pytest.raises(ValueError, match="dims"):
        kernel.get_profiler().make_inputs()
    profiler = kernel.get_profiler(dims={"n": 37})
    assert profiler.make_inputs()[0].shape == (37,)
    profiler.assert_allclose(lambda a, b: a + b)
    assert np.isfinite(profiler.do_bench(warmup=1, rep=2))  # type: ignore[arg-type]
