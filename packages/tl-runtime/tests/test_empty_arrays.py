"""Zero-size arrays (a symbolic dim bound to 0) run through every adapter.

numpy gives multi-dimensional zero-size arrays zero strides (``(0, 0)``);
TVM-built kernels refuse those as "not a compact array" unless the runtime
re-views them with the strides of the declared layout.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import runtime_kernels as rk

import tl_runtime

ADAPTERS = ["tvm_ffi", "cython"]

ZERO_ROW_INPUTS: dict[str, Callable[[], Any]] = {
    "np.empty": lambda: np.empty((0, 8), "float32"),
    "astype": lambda: np.zeros((0, 8)).astype("float32"),
    "slice": lambda: np.ones((4, 8), "float32")[2:2],
}


def _load(adapter: str, out_idx: tuple[int, ...]) -> Any:
    if adapter == "cython" and not tl_runtime.adapter_availability("cython"):
        pytest.skip("the cython adapter is not available here")
    return tl_runtime.load(rk.cached_artifact("scale_rows", out_idx=out_idx), adapter=adapter)


@pytest.mark.parametrize("adapter", ADAPTERS)
@pytest.mark.parametrize("make", list(ZERO_ROW_INPUTS.values()), ids=list(ZERO_ROW_INPUTS))
def test_zero_rows_with_an_allocated_output(adapter: str, make: Callable[[], Any]) -> None:
    kernel = _load(adapter, out_idx=(1,))
    a = make()
    for _ in range(2):  # the second call exercises the fast path's cache
        out = kernel(a)
        assert out.shape == (0, 8) and out.dtype == np.float32


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_zero_rows_with_a_caller_output(adapter: str) -> None:
    kernel = _load(adapter, out_idx=())
    kernel(np.empty((0, 8), "float32"), np.empty((0, 8), "float32"))


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_rows_after_zero_rows_still_compute(adapter: str) -> None:
    kernel = _load(adapter, out_idx=(1,))
    kernel(np.empty((0, 8), "float32"))
    a = np.arange(24, dtype="float32").reshape(3, 8)
    np.testing.assert_array_equal(kernel(a), a * 2)
