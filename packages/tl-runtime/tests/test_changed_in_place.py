"""Arrays changed in place between two calls of a kernel, on both CPU adapters.

The fast paths cache what they read from the last arrays; a numpy array reshaped,
restrided, retyped or made read-only in place, or a torch tensor resized, re-pointed,
restrided or transposed in place, must be checked again: the second call computes on
the array as it is now, or is refused naming the parameter, never on the old layout.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import runtime_kernels as rk
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tl_runtime

Artifact = Callable[..., Path]


def _set_strides(array: Any, strides: tuple[int, ...]) -> None:
    """``array.strides = strides`` in place (deprecated in numpy 2.4, still what callers do)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        array.strides = strides


def _int_mix_reference(a: Any, b: Any, shift: int) -> Any:
    return a.astype(np.int64) + b.astype(np.int64) + shift


def test_reshaped_in_place_is_computed_on_its_new_shape(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("int_mix", out_idx=(2,)), adapter=adapter)
    a = np.arange(24, dtype=np.int8).reshape(4, 6)
    kernel(a, np.ones(6, np.uint16), 1, True)
    a.shape = (6, 4)  # the same memory, symbolic m and n swapped
    b = np.arange(4, dtype=np.uint16)
    np.testing.assert_array_equal(kernel(a, b, 1, True), _int_mix_reference(a, b, 1))
    a.shape = (3, 8)
    b = np.arange(8, dtype=np.uint16)
    np.testing.assert_array_equal(kernel(a, b, 2, True), _int_mix_reference(a, b, 2))


def test_restrided_in_place_is_read_with_its_new_strides(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("strided_rows"), adapter=adapter)
    memory = rk.aligned_array(np, (64,), "float32")
    memory[...] = np.arange(64)
    a = np.lib.stride_tricks.as_strided(memory, (4, 8), (64, 4))  # row stride 16 elements
    c = rk.aligned_array(np, (4, 8), "float32")
    kernel(a, c)
    np.testing.assert_array_equal(c, 2 * a)
    _set_strides(a, (32, 4))  # row stride 8 elements: other rows of the same memory
    kernel(a, c)
    np.testing.assert_array_equal(c, 2 * a)


def test_retyped_in_place_is_refused_by_name(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("vadd_elem"), adapter=adapter)
    a, b, c = (rk.aligned_array(np, (1024,), "float32") for _ in range(3))
    kernel(a, b, c)
    a.dtype = np.int32
    with pytest.raises(TypeError, match="parameter 'A': expected dtype float32, got int32"):
        kernel(a, b, c)
    a.dtype = np.float32
    a[...] = 1.0
    kernel(a, b, c)
    np.testing.assert_array_equal(c, a + b)


def test_made_read_only_in_place_is_refused_then_accepted_again(
    artifact: Artifact, adapter: str
) -> None:
    kernel = tl_runtime.load(artifact("vadd_elem"), adapter=adapter)
    a, b, c = (rk.aligned_array(np, (1024,), "float32") for _ in range(3))
    a[...] = 2.0
    kernel(a, b, c)
    c.flags.writeable = False
    with pytest.raises(ValueError, match="parameter 'C': expected a writable array"):
        kernel(a, b, c)
    c.flags.writeable = True
    b[...] = 1.0
    kernel(a, b, c)
    np.testing.assert_array_equal(c, a + b)


@pytest.mark.parametrize(
    "change",
    ["resize_", "set_", "as_strided_", "t_", "data", "data_neg"],
)
def test_torch_tensor_changed_in_place(artifact: Artifact, adapter: str, change: str) -> None:
    torch = pytest.importorskip("torch")
    kernel = tl_runtime.load(artifact("scale_rows"), adapter=adapter)
    a = torch.arange(32, dtype=torch.float32).reshape(4, 8)
    c = torch.zeros(4, 8)
    kernel(a, c)
    assert torch.equal(c, 2 * a)
    if change == "resize_":
        a.resize_(2, 8)
        c = torch.zeros(2, 8)
    elif change == "set_":
        a.set_(torch.full((3, 8), 5.0))
        c = torch.zeros(3, 8)
    elif change == "as_strided_":
        a.as_strided_((2, 8), (16, 1))  # every other row: not C-contiguous
    elif change == "t_":
        a = torch.arange(64, dtype=torch.float32).reshape(8, 8)
        c = torch.zeros(8, 8)
        kernel(a, c)
        a.t_()  # transposed in place: not C-contiguous
    elif change == "data_neg":  # the same tensor object, now a lazily negated view
        a.data = (-torch.arange(32, dtype=torch.float32).reshape(4, 8))._neg_view()
    else:
        a.data = torch.full((5, 8), 3.0)
        c = torch.zeros(5, 8)
    if a.is_contiguous():
        kernel(a, c)
        assert torch.equal(c, 2 * a)
    else:
        with pytest.raises(ValueError, match="parameter 'A': expected a C-contiguous array"):
            kernel(a, c)


@st.composite
def _two_layouts(draw: st.DrawFn) -> tuple[tuple[int, int], tuple[int, int]]:
    """Two (m, n) shapes of one element count: an array reshaped in place between calls."""
    size = draw(st.sampled_from([1, 6, 12, 24, 60, 64]))
    divisors = [d for d in range(1, size + 1) if size % d == 0]
    first = draw(st.sampled_from(divisors))
    second = draw(st.sampled_from(divisors))
    return (first, size // first), (second, size // second)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(layouts=_two_layouts(), adapter=st.sampled_from(["tvm_ffi", "cython"]))
def test_fuzz_reshaped_in_place(
    layouts: tuple[tuple[int, int], tuple[int, int]], adapter: str
) -> None:
    kernel = tl_runtime.load(rk.cached_artifact("int_mix", out_idx=(2,)), adapter=adapter)
    first, second = layouts
    a = np.arange(first[0] * first[1], dtype=np.int8).reshape(first)
    kernel(a, np.ones(first[1], np.uint16), 0, False)
    a.shape = second
    b = np.arange(second[1], dtype=np.uint16)
    np.testing.assert_array_equal(kernel(a, b, 3, True), _int_mix_reference(a, b, 3))


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    rows=st.integers(1, 4),
    leads=st.tuples(st.sampled_from([0, 8, 9, 16]), st.sampled_from([0, 8, 9, 16])),
    adapter=st.sampled_from(["tvm_ffi", "cython"]),
)
def test_fuzz_restrided_in_place(rows: int, leads: tuple[int, int], adapter: str) -> None:
    kernel = tl_runtime.load(rk.cached_artifact("strided_rows"), adapter=adapter)
    memory = rk.aligned_array(np, (4 * 16 + 8,), "float32")
    memory[...] = np.arange(memory.size)
    a = np.ndarray((rows, 8), np.float32, buffer=memory, strides=(leads[0] * 4, 4))
    c = rk.aligned_array(np, (rows, 8), "float32")
    kernel(a, c)
    np.testing.assert_array_equal(c, 2 * a)
    _set_strides(a, (leads[1] * 4, 4))
    kernel(a, c)
    np.testing.assert_array_equal(c, 2 * a)
