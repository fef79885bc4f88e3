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
    assert kernel.get_profiler(dims={"n": np.int64(5)}).make_inputs()[0].shape == (5,)


@pytest.mark.parametrize("size", [37.0, True, "37", -1, None, 3.5])
def test_a_dim_size_that_is_not_a_non_negative_int_is_refused_by_name(
    fake_backend: Any, size: Any
) -> None:
    # 37.0 made a 37-element input, True a 1-element one: both passed without a word.
    kernel = tl_jit.compile(fake_backend.vadd_n, out_idx=[-1], target="llvm")
    with pytest.raises(ValueError, match=r"dims\['n'\]: expected a non-negative integer size"):
        kernel.get_profiler(dims={"n": size})
    with pytest.raises(ValueError, match=r"dims\['n'\]: expected a non-negative integer size"):
        kernel.get_profiler().make_inputs(dims={"n": size})
    with pytest.raises(TypeError, match="dims: expected a mapping"):
        kernel.get_profiler(dims=[("n", 37)])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "dtype", ["bool", "uint8", "uint32", "int8", "int64", "float16", "float32", "float64"]
)
def test_random_arrays_have_the_dtype_and_the_documented_values(dtype: str) -> None:
    from tl_jit.profiler import random_array

    data = random_array((4096,), dtype, np.random.default_rng(0))
    assert data.dtype == np.dtype(dtype) and data.shape == (4096,)
    if dtype.startswith("uint"):
        assert data.min() >= 0 and data.max() <= 8
    elif dtype.startswith("int"):
        assert data.min() >= -4 and data.max() <= 4
    elif dtype.startswith("float"):
        assert 0.5 < float(np.std(data.astype(np.float64))) < 1.5


class _FakeDevice:
    def __init__(self, type_: str) -> None:
        self.type = type_


class _FakeTensor:
    def __init__(self, dlpack_code: int) -> None:
        self._code = dlpack_code

    def __dlpack_device__(self) -> tuple[int, int]:
        return (self._code, 0)


def _fake_torch(device_type: str = "npu", dlpack_code: int = 99) -> Any:
    """A stand-in for torch with one accelerator, through torch's device-generic API only."""
    import types

    torch = types.ModuleType("torch")
    state = {"synchronized": 0, "events": 0}
    device = _FakeDevice(device_type)

    class Event:
        def __init__(self, *, device: Any, enable_timing: bool) -> None:
            assert enable_timing and device.type == device_type
            state["events"] += 1

        def record(self) -> None:
            pass

        def elapsed_time(self, other: Any) -> float:
            return 2.0

    def synchronize() -> None:
        state["synchronized"] += 1

    torch.accelerator = types.SimpleNamespace(  # type: ignore[attr-defined]
        is_available=lambda: True, current_accelerator=lambda: device, synchronize=synchronize
    )
    torch.Event = Event  # type: ignore[attr-defined]
    torch.empty = lambda *shape, device: _FakeTensor(dlpack_code)  # type: ignore[attr-defined]
    torch.state = state  # type: ignore[attr-defined]
    return torch


def test_do_bench_times_on_torchs_accelerator_whatever_it_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    torch = _fake_torch("npu")
    monkeypatch.setitem(sys.modules, "torch", torch)
    assert do_bench(lambda: None, warmup=0, rep=10) == 2.0  # "auto": the accelerator's events
    assert torch.state["synchronized"] >= 2 and torch.state["events"] >= 2
    assert do_bench(lambda: None, warmup=0, rep=10, device="npu") == 2.0
    wall = do_bench(lambda: None, warmup=0, rep=1, device="cpu")
    assert isinstance(wall, float) and wall != 2.0
    with pytest.raises(ValueError, match="accelerator \\(found: 'npu'\\), got 'tpu'"):
        do_bench(lambda: None, device="tpu")


def test_inputs_follow_the_artifacts_device_types(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from tl_jit.profiler import _input_placement

    assert _input_placement((1,)) == ("numpy", None)
    monkeypatch.setitem(sys.modules, "torch", _fake_torch("npu", dlpack_code=99))
    like, device = _input_placement((99,))
    assert like == "torch" and device.type == "npu"
    assert _input_placement((1, 42)) == ("torch", None)  # the accelerator is not accepted
    assert _input_placement((1,)) == ("numpy", None)


def test_random_bfloat16_inputs_for_numpy_are_ml_dtypes_arrays() -> None:
    """A CPU bfloat16 kernel's profiler inputs (numpy) are ml_dtypes' bfloat16: they were
    refused ("bfloat16 inputs need torch") though the kernel takes them."""
    import ml_dtypes
    import numpy as np

    from tl_jit.profiler import random_array

    data = random_array((4, 3), "bfloat16", np.random.default_rng(0))
    assert data.dtype == np.dtype(ml_dtypes.bfloat16) and data.shape == (4, 3)
    assert np.isfinite(data.astype(np.float32)).all()
