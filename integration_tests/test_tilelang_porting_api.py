"""TileLang API that ported programs call, found missing or refused by running TileLang's
own tests here: the cache switches, ``get_kernel_source(kernel_only=...)``,
``T.dtype(...).as_torch()``, the reductions' ``batch``/``nan_propagate``/``annotations``
keywords, ``-> None`` on a kernel, ``tilelang.math``/``tilelang.autotuner`` after a bare
``import tl_jit as tilelang`` and ``set_autotune_inputs``."""

from __future__ import annotations

import os
import subprocess
import sys
import types
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tl_jit
import tl_jit.language as T
from tl_ir.errors import KernelTypeError, UnsupportedError
from tl_jit.tune_timing import Measurement


def _doubling_kernel() -> Any:
    @T.prim_func
    def double(x: T.Tensor((8,), "float32"), out: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=8):
            for i in T.Parallel(8):
                out[i] = x[i] * 2.0

    return double


# ------------------------------------------------------------------ cache switches


@pytest.fixture
def cache_switch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private cache root, TL_DISABLE_CACHE unset (restored afterwards) and the switch
    turned back on whatever the test did."""
    monkeypatch.setenv("TL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TL_DISABLE_CACHE", raising=False)
    try:
        yield tmp_path / "cache"
    finally:
        tl_jit.enable_cache()


def _kernel_entries(root: Path) -> list[Path]:
    kernels = root / "kernels"
    return list(kernels.iterdir()) if kernels.is_dir() else []


def test_disable_cache_compiles_without_writing_and_enable_cache_restores_it(
    cache_switch: Path,
) -> None:
    assert tl_jit.is_cache_enabled()
    tl_jit.disable_cache()
    assert not tl_jit.is_cache_enabled()
    kernel = tl_jit.compile(_doubling_kernel(), out_idx=-1, target="c")
    np.testing.assert_allclose(kernel(np.ones(8, np.float32)), np.full(8, 2.0))
    assert _kernel_entries(cache_switch) == []
    tl_jit.disable_cache()  # twice: still one switch to undo
    tl_jit.enable_cache()
    assert tl_jit.is_cache_enabled()
    assert "TL_DISABLE_CACHE" not in os.environ
    tl_jit.compile(_doubling_kernel(), out_idx=-1, target="c")
    assert len(_kernel_entries(cache_switch)) == 1


def test_enable_cache_leaves_a_disabling_environment_in_force(
    cache_switch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As TileLang's TILELANG_DISABLE_CACHE: the environment's setting wins.
    monkeypatch.setenv("TL_DISABLE_CACHE", "yes")
    assert not tl_jit.is_cache_enabled()
    tl_jit.disable_cache()
    tl_jit.enable_cache()
    assert not tl_jit.is_cache_enabled()
    assert os.environ["TL_DISABLE_CACHE"] == "yes"
    tl_jit.enable_cache()  # without a disable_cache before it: nothing to undo
    assert os.environ["TL_DISABLE_CACHE"] == "yes"


# ------------------------------------------------------------------ kernel source


def test_get_kernel_source_takes_kernel_only(tmp_path: Path) -> None:
    kernel = tl_jit.compile(_doubling_kernel(), out_idx=-1, target="c")
    device = kernel.get_kernel_source()
    assert kernel.get_kernel_source(kernel_only=True) == device
    # A CPU kernel's one source is both device and host code.
    assert kernel.get_kernel_source(kernel_only=False) == device
    with pytest.raises(TypeError, match=r"kernel_only=\.\.\.\): expected a bool, got str"):
        kernel.get_kernel_source(kernel_only="no")  # type: ignore[arg-type]
    # An artifact with a host source (a GPU kernel's): the full source has both.
    (tmp_path / "device.cu").write_text("__global__ void k() {}")
    (tmp_path / "host.cc").write_text("int host() { return 0; }")
    kernel._sources = lambda: [tmp_path / "device.cu", tmp_path / "host.cc"]  # type: ignore[method-assign]
    assert kernel.get_kernel_source(kernel_only=True) == "__global__ void k() {}"
    full = kernel.get_kernel_source(kernel_only=False)
    assert full == "__global__ void k() {}\n\nint host() { return 0; }"


# ------------------------------------------------------------------ dtype.as_torch


def test_dtype_as_torch() -> None:
    torch = pytest.importorskip("torch")
    assert T.float16.as_torch() is torch.float16
    assert T.dtype("half").as_torch() is torch.float16
    assert T.dtype(np.float32).as_torch() is torch.float32
    assert T.bfloat16.as_torch() is torch.bfloat16
    assert T.int8.as_torch() is torch.int8
    assert T.bool.as_torch() is torch.bool


def test_dtype_as_torch_names_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    with pytest.raises(ImportError, match=r"T\.float16\.as_torch\(\): torch is not installed"):
        T.float16.as_torch()
    old_torch = types.ModuleType("torch")
    old_torch.__version__ = "1.0"  # type: ignore[attr-defined]
    old_torch.dtype = type("dtype", (), {})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", old_torch)
    with pytest.raises(TypeError, match=r"torch 1\.0 has no dtype torch\.float8_e5m2"):
        T.float8_e5m2.as_torch()


# ------------------------------------------------------------------ reductions


def _row_reduction(case: str, dtype: str = "float32") -> Any:
    @T.prim_func
    def main(A: T.Tensor((4, 8), dtype), B: T.Tensor((4,), dtype)):
        with T.Kernel(1, threads=32):
            tile = T.alloc_fragment((4, 8), dtype)
            row = T.alloc_fragment((4,), dtype)
            T.copy(A, tile)
            if case == "sum":
                T.reduce_sum(tile, row, dim=1, batch=2)
            elif case == "max":
                T.reduce_max(tile, row, dim=1, batch=4, nan_propagate=False)
            elif case == "min":
                T.reduce_min(tile, row, 1, True, 2, False, {"enable_fadd2": False})
            elif case == "abssum":
                T.reduce_abssum(tile, row, dim=1, batch=1, annotations={})
            elif case == "absmax":
                T.reduce_absmax(tile, row, dim=1, batch=2, nan_propagate=False)
            elif case == "sum_nan":
                T.reduce(tile, row, 1, "sum", True, 2, True)
            elif case == "max_nan":
                T.reduce_max(tile, row, dim=1, nan_propagate=True)
            elif case == "absmax_nan":
                T.reduce_absmax(tile, row, dim=1, nan_propagate=True)
            elif case == "batch0":
                T.reduce_sum(tile, row, dim=1, batch=0)
            elif case == "batch_float":
                T.reduce_max(tile, row, dim=1, batch=2.0)
            elif case == "nan_flag":
                T.reduce_min(tile, row, dim=1, nan_propagate="yes")
            T.copy(row, B)

    return main


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("sum", lambda a: a.sum(1)),
        ("max", lambda a: a.max(1)),
        ("min", lambda a: a.min(1)),
        ("abssum", lambda a: np.abs(a).sum(1)),
        ("absmax", lambda a: np.abs(a).max(1)),
        ("sum_nan", lambda a: a.sum(1)),
    ],
)
def test_reductions_take_tilelangs_hint_keywords(case: str, expected: Any) -> None:
    kernel = tl_jit.compile(_row_reduction(case), out_idx=-1, target="c")
    a = (np.arange(32, dtype=np.float32).reshape(4, 8) - 13.0) * 0.5
    np.testing.assert_allclose(kernel(a), expected(a), rtol=1e-6)


def test_nan_propagate_is_honest_where_it_changes_nothing() -> None:
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    a[1, 3] = np.nan
    summed = tl_jit.compile(_row_reduction("sum_nan"), out_idx=-1, target="c")(a)
    assert np.isnan(summed[1]) and not np.isnan(summed[[0, 2, 3]]).any()
    # Integer tiles hold no NaN: a max propagating NaN is the plain max.
    ints = tl_jit.compile(_row_reduction("max_nan", "int32"), out_idx=-1, target="c")
    b = np.arange(32, dtype=np.int32).reshape(4, 8)
    np.testing.assert_array_equal(ints(b), b.max(1))


@pytest.mark.parametrize("case", ["max_nan", "absmax_nan"])
def test_nan_propagate_on_a_float_max_is_refused(case: str) -> None:
    kind = case.removesuffix("_nan")
    with pytest.raises(NotImplementedError) as caught:
        _row_reduction(case)
    assert isinstance(caught.value, UnsupportedError)
    assert f"T.reduce_{kind}(nan_propagate=True) is not supported yet" in str(caught.value)


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("batch0", r"T\.reduce_sum\(batch=\.\.\.\) .*an int >= 1.*got 0"),
        ("batch_float", r"T\.reduce_max\(batch=\.\.\.\) .*an int >= 1.*got 2\.0"),
        ("nan_flag", r"T\.reduce_min\(nan_propagate=\.\.\.\): expected a bool.*got 'yes'"),
    ],
)
def test_bad_reduction_hints_are_refused(case: str, message: str) -> None:
    with pytest.raises(KernelTypeError, match=message):
        _row_reduction(case)


# ------------------------------------------------------------------ return annotation


def test_a_kernel_annotated_to_return_none_compiles() -> None:
    # TileLang's tests annotate their kernels so.
    @T.prim_func
    def double(x: T.Tensor((8,), "float32"), out: T.Tensor((8,), "float32")) -> None:
        with T.Kernel(1, threads=8):
            for i in T.Parallel(8):
                out[i] = x[i] * 2.0

    kernel = tl_jit.compile(double, out_idx=-1, target="c")
    np.testing.assert_allclose(kernel(np.arange(8, dtype=np.float32)), np.arange(8) * 2.0)


def test_a_kernel_annotated_to_return_a_value_is_refused() -> None:
    with pytest.raises(KernelTypeError, match=r"a kernel returns nothing.*'-> None', got"):

        @T.prim_func
        def main(x: T.Tensor((8,), "float32")) -> T.float32:  # type: ignore[valid-type]
            with T.Kernel(1, threads=8):
                for i in T.Parallel(8):
                    x[i] = x[i] + 1.0


# ------------------------------------------------------------------ submodules


def test_tilelang_math_and_autotuner_after_a_bare_import() -> None:
    code = (
        "import tl_jit as tilelang\n"
        "assert tilelang.math.next_power_of_2(5) == 8\n"
        "assert tilelang.math.cdiv(7, 2) == 4\n"
        "assert callable(tilelang.autotuner.set_autotune_inputs)\n"
        "assert tilelang.autotuner.autotune is tilelang.autotune\n"
        "assert 'tvm' not in __import__('sys').modules\n"  # both stay light
        "import math\n"
        "from tl_jit import *\n"
        "assert math.sqrt(4.0) == 2.0\n"  # the star import left the stdlib's math alone
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# ------------------------------------------------------------------ set_autotune_inputs


def _tunable(n: int) -> Any:
    @tl_jit.jit(out_idx=-1, target="c")
    def scale(factor: float = 2.0, threads: int = 8) -> Any:
        @T.prim_func
        def main(x: T.Tensor((n,), "float32"), out: T.Tensor((n,), "float32")):
            with T.Kernel(1, threads=threads):
                for i in T.Parallel(n):
                    out[i] = x[i] * factor

        return main

    return scale


def test_set_autotune_inputs_gives_the_inputs_of_every_timing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tl_jit.autotuner import get_autotune_inputs, set_autotune_inputs

    monkeypatch.setenv("TL_CACHE_DIR", str(tmp_path / "cache"))
    seen: list[np.ndarray] = []

    def timer(measurement: Measurement) -> float:
        seen.append(np.array(measurement.inputs[0]))
        return 1.0 if measurement.config["threads"] == 8 else 2.0

    tuned = tl_jit.autotune(
        configs=[{"threads": 8}, {"threads": 16}],
        ref_prog=lambda x: x * 2.0,
        max_workers=1,
        timer=timer,
        cache_results=False,
    )(_tunable(16))
    given = np.full(16, 7.0, np.float32)
    with set_autotune_inputs(given) as capture:
        assert get_autotune_inputs() == [given] == capture.inputs
        best = tuned()
    assert get_autotune_inputs() is None
    assert best.config == {"threads": 8}
    assert seen and all(np.array_equal(inputs, given) for inputs in seen)
    np.testing.assert_allclose(best(given), given * 2.0)

    # Outside the block the inputs are random ones again.
    seen.clear()
    tl_jit.autotune(configs=[{"threads": 8}], max_workers=1, timer=timer, cache_results=False)(
        _tunable(16)
    )()
    assert seen and not np.array_equal(seen[0], given)


def test_supply_prog_gets_the_parameters_a_call_takes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # TileLang hands supply_prog the inputs only (not the out_idx outputs); TileLang's
    # fp8 GEMM example unpacks `a_param, b_param = args`: every configuration failed.
    monkeypatch.setenv("TL_CACHE_DIR", str(tmp_path / "cache"))
    given: list[list[str]] = []

    def supply(params: Any) -> list[np.ndarray]:
        given.append([param.name for param in params])
        (x,) = params
        return [np.ones(x.shape, np.float32)]

    tuned = tl_jit.autotune(
        configs=[{"threads": 8}, {"threads": 16}],
        ref_prog=lambda x: x * 2.0,
        supply_prog=supply,
        max_workers=1,
        cache_results=False,
    )(_tunable(16))
    assert tuned().config in ({"threads": 8}, {"threads": 16})
    assert given and all(names == ["x"] for names in given)


def test_set_autotune_inputs_replaces_supply_prog_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tl_jit.autotuner import set_autotune_inputs

    monkeypatch.setenv("TL_CACHE_DIR", str(tmp_path / "cache"))
    seen: list[np.ndarray] = []

    def timer(measurement: Measurement) -> float:
        seen.append(np.array(measurement.inputs[0]))
        return 1.0

    tuned = tl_jit.autotune(
        configs=[{"factor": 3.0}],
        max_workers=1,
        timer=timer,
        supply_prog=lambda params: [np.zeros(8, np.float32)],
    )(_tunable(8))
    given = [np.arange(8, dtype=np.float32)]
    with set_autotune_inputs(given), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tuned()
    assert any("supply_prog is ignored" in str(w.message) for w in caught)
    assert np.array_equal(seen[0], given[0])
    assert set_autotune_inputs().inputs == []  # a kernel without inputs
    assert set_autotune_inputs((1, 2)).inputs == set_autotune_inputs(1, 2).inputs == [1, 2]


def test_a_classic_jit_function_has_tilelangs_get_tir_source_and_par_compile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # TileLang's par_compile and min_blocks_per_sm tests call these on a classic @jit.
    monkeypatch.setenv("TL_CACHE_DIR", str(tmp_path / "cache"))

    @tl_jit.jit(out_idx=[-1], target="c")
    def add_one(n: int) -> Any:
        @T.prim_func
        def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
            with T.Kernel(1, threads=1):
                for i in T.serial(n):
                    B[i] = A[i] + 1.0

        return main

    assert add_one.get_tir(16).script() == add_one.get_prim_func(16).script()
    source = add_one.get_kernel_source(16)
    assert source and source == add_one(16).get_kernel_source()
    kernels = add_one.par_compile([(16,), {"n": 32}])
    assert [k.params[0].shape for k in kernels if k is not None] == [(16,), (32,)]
    np.testing.assert_array_equal(kernels[1](np.zeros(32, np.float32)), np.ones(32))
    with pytest.raises(TypeError, match="expected each config to be a dict or a tuple"):
        add_one.par_compile([16])
    with pytest.warns(UserWarning, match="compile failed"):
        mixed = add_one.par_compile([(8,), ("x",)], ignore_error=True)
    assert mixed[0] is not None and mixed[1] is None


# ------------------------------------------------------------------ kernel and profiler names


def test_kernel_source_execution_backend_and_sized_profiler_inputs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # TileLang's kernel.kernel_source, kernel.execution_backend and
    # profiler.do_bench(dynamic_symbolic_constraints=...) / _get_inputs(...=...).
    monkeypatch.setenv("TL_CACHE_DIR", str(tmp_path))
    n = T.symbolic("n")

    @T.prim_func
    def double(x: T.Tensor((n,), "float32"), out: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(n):
                out[i] = x[i] * 2.0

    kernel = tl_jit.compile(double, out_idx=[1], target="c", execution_backend="cython")
    assert kernel.kernel_source == kernel.get_kernel_source()
    assert kernel.execution_backend == "cython"
    profiler = kernel.get_profiler()
    (x,) = profiler._get_inputs(dynamic_symbolic_constraints={"n": 12})
    assert x.shape == (12,)
    latency = profiler.do_bench(warmup=1, rep=2, dynamic_symbolic_constraints={"n": 12})
    assert isinstance(latency, float) and latency > 0
    with pytest.raises(ValueError, match="symbolic dim 'n'"):
        profiler.do_bench(warmup=1, rep=2)
