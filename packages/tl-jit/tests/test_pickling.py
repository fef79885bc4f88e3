"""Decorated kernel functions pickle by reference, as plain functions do: another
process (a spawn pool worker) gets the same definition by importing it."""

from __future__ import annotations

import copy
import multiprocessing
import pickle
from typing import Any

import numpy as np
import pytest
import tljit_eager_kernel
import tljit_scale_kernel

import tl_jit


@tl_jit.autotune(configs=[{"repeat": 1}, {"repeat": 2}])
@tl_jit.jit(target="c")
def tuned_add(A: Any, B: Any, repeat: int = 1) -> Any:
    """An autotuned eager kernel at module level (never called here)."""
    return tljit_eager_kernel.repeated_add.func(A, B, repeat)


def _decorated() -> list[Any]:
    return [tljit_eager_kernel.repeated_add, tljit_scale_kernel.scale, tuned_add]


@pytest.mark.parametrize("index", [0, 1, 2], ids=["eager", "builder", "autotune"])
def test_a_decorated_function_pickles_and_copies_as_itself(index: int) -> None:
    decorated = _decorated()[index]
    assert pickle.loads(pickle.dumps(decorated)) is decorated
    assert copy.copy(decorated) is decorated
    assert copy.deepcopy(decorated) is decorated


def _run_in_worker(payload: bytes) -> list[float]:
    kernel_function = pickle.loads(payload)
    a = np.arange(4, dtype=np.float32)
    return [float(v) for v in kernel_function(a, a)]


def test_a_spawned_worker_runs_the_pickled_kernel_function() -> None:
    payload = pickle.dumps(tljit_eager_kernel.repeated_add)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.apply(_run_in_worker, (payload,)) == [0.0, 2.0, 4.0, 6.0]


def test_a_function_defined_inside_another_is_refused_by_name() -> None:
    def build() -> Any:
        @tl_jit.jit
        def local(N: int) -> None:
            pass

        return local

    with pytest.raises(
        TypeError,
        match=r"the @jit function .*<locals>.local cannot be pickled: it is defined inside a function",
    ):
        pickle.dumps(build())


def test_a_wrapper_under_another_name_pickles_under_that_name() -> None:
    # tuned_scale = autotune(...)(scale), the pattern docs/autotune.md shows: the name
    # `scale` holds the @jit function, the wrapper is found under `tuned_scale`.
    tuned = tljit_scale_kernel.tuned_scale
    assert pickle.loads(pickle.dumps(tuned)) is tuned


def test_copies_of_a_nested_function_are_itself() -> None:
    @tl_jit.jit
    def local(N: int) -> None:
        pass

    assert copy.copy(local) is local and copy.deepcopy(local) is local


def test_a_rebound_name_is_refused() -> None:
    original = tljit_scale_kernel.scale
    try:
        tljit_scale_kernel.scale = lambda: None  # type: ignore[assignment]
        with pytest.raises(TypeError, match=r"tljit_scale_kernel.scale is another object"):
            pickle.dumps(original)
    finally:
        tljit_scale_kernel.scale = original


def test_a_compiled_kernel_copies_as_itself_and_refuses_pickling(
    fake_backend: Any, cache_dir: Any
) -> None:
    """``copy.deepcopy`` of an object holding a kernel (a torch module) works; pickling
    a loaded library does not, and says what to send instead."""
    kernel = tljit_scale_kernel.scale(16, 2.0)
    holder = {"kernel": kernel, "weights": [1.0]}
    copied = copy.deepcopy(holder)
    assert copied["kernel"] is kernel and copied["weights"] is not holder["weights"]
    assert copy.copy(kernel) is kernel
    with pytest.raises(TypeError, match=r"a JITKernel cannot be pickled .*artifact"):
        pickle.dumps(kernel)
