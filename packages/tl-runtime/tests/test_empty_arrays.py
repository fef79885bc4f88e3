"""Zero-size arrays (a symbolic dim bound to 0) run through every adapter.

numpy and torch stride a zero-size array as if each 0 extent were 1 (or give it
zero strides); TVM-built kernels check the exact compact strides, the product of
the extents to the right (``(0, 1)`` for shape ``(5, 0)``), and refuse anything
else as "not a compact array" unless the runtime re-views the argument.
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


def _load(adapter: str, out_idx: tuple[int, ...], kernel: str = "scale_rows") -> Any:
    if adapter == "cython" and not tl_runtime.adapter_availability("cython"):
        pytest.skip("the cython adapter is not available here")
    return tl_runtime.load(rk.cached_artifact(kernel, out_idx=out_idx), adapter=adapter)


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


# int_mix: A (m, n) int8, B (n,) uint16 -> C (m, n) int64, both dims symbolic.
ZERO_INNER_SHAPES = [(5, 0), (0, 0), (0, 5)]


@pytest.mark.parametrize("adapter", ADAPTERS)
@pytest.mark.parametrize("library", ["numpy", "torch"])
@pytest.mark.parametrize("shape", ZERO_INNER_SHAPES, ids=str)
def test_zero_size_inner_dims(adapter: str, library: str, shape: tuple[int, int]) -> None:
    caller_output = _load(adapter, out_idx=(), kernel="int_mix")
    allocated_output = _load(adapter, out_idx=(2,), kernel="int_mix")
    a = np.zeros(shape, "int8")
    b = np.zeros(shape[1:], "uint16")
    c = np.zeros(shape, "int64")
    if library == "torch":
        torch = pytest.importorskip("torch")
        a, b, c = torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(c)
    for _ in range(2):  # the second call exercises the fast path's cache
        caller_output(a, b, c, 3, True)
        out = allocated_output(a, b, 3, True)
        assert tuple(out.shape) == shape
    filled = np.arange(6, dtype="int8").reshape(2, 3)
    np.testing.assert_array_equal(
        allocated_output(filled, np.ones(3, "uint16"), 10, True), filled.astype("int64") + 11
    )
