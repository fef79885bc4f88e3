"""Profiler checks: what assert_allclose compares, the inputs make_inputs refuses or gives,
and the option checks of do_bench and get_profiler."""

from __future__ import annotations

import dataclasses
import types
from typing import Any

import numpy as np
import pytest

import tl_jit
import tl_runtime
from tl_jit.profiler import Profiler, do_bench


def _with_roles(fake_backend: Any, monkeypatch: pytest.MonkeyPatch, roles: dict[str, str]) -> None:
    """Make the fake backend declare ``roles`` (name -> role) in the manifests it writes, as
    the real compiler does for the parameters a kernel writes in place (with the element
    alignment it declares, so that only the roles differ from the fake backend's own)."""
    plain = fake_backend._params

    def params_with_roles(func: Any, out_idx: Any) -> list[tl_runtime.ParamSpec]:
        return [
            dataclasses.replace(p, role=roles[p.name], alignment=4) if p.name in roles else p
            for p in plain(func, out_idx)
        ]

    monkeypatch.setattr(fake_backend, "_params", params_with_roles)


def _scale_into(factor: float) -> Any:
    """``Out = A * factor`` with the written parameter first (no out_idx)."""
    from tvm.script import tirx as T

    @T.prim_func
    def scale_into(Out: T.Buffer((64,), "float32"), A: T.Buffer((64,), "float32")):
        T.func_attr({"tir.noalias": True, "global_symbol": "scale_into"})
        for i in range(64):
            Out[i] = A[i] * T.float32(factor)

    return scale_into


def _accumulate_and_double(bump: float) -> Any:
    """``X += A + bump`` in place and ``C = 2 * A`` (C is the out_idx output)."""
    from tvm.script import tirx as T

    @T.prim_func
    def accumulate(
        X: T.Buffer((32,), "float32"),
        A: T.Buffer((32,), "float32"),
        C: T.Buffer((32,), "float32"),
    ):
        T.func_attr({"tir.noalias": True, "global_symbol": "accumulate"})
        for i in range(32):
            X[i] = X[i] + A[i] + T.float32(bump)
            C[i] = A[i] * T.float32(2.0)

    return accumulate


def test_assert_allclose_without_out_idx_compares_the_parameters_the_kernel_writes(
    fake_backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It compared the last array arguments: a kernel writing zeros into Out passed (A was
    # compared with A) and a correct one failed (A was compared with 2 * A).
    _with_roles(fake_backend, monkeypatch, {"Out": "inout"})
    broken = tl_jit.compile(_scale_into(0.0), target="llvm")
    assert [p.role for p in broken.params] == ["inout", "input"]
    with pytest.raises(AssertionError, match="output 0 differs from ref_fn \\(parameter 'Out'\\)"):
        broken.get_profiler().assert_allclose(lambda out, a: a.copy(), rtol=0, atol=0)
    correct = tl_jit.compile(_scale_into(2.0), target="llvm")
    correct.get_profiler().assert_allclose(lambda out, a: a * 2, rtol=1e-6, atol=1e-6)
    with pytest.raises(AssertionError, match=r"expected 1 value\(s\).*\['Out'\].*got 2"):
        correct.get_profiler().assert_allclose(lambda out, a: (a * 2, a))


def test_assert_allclose_takes_outputs_then_in_place_writes(
    fake_backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _with_roles(fake_backend, monkeypatch, {"X": "inout"})
    kernel = tl_jit.compile(_accumulate_and_double(1.0), out_idx=-1, target="llvm")
    profiler = kernel.get_profiler()
    profiler.assert_allclose(lambda x, a: (2 * a, x + a + 1), rtol=1e-6, atol=1e-6)
    profiler.assert_allclose(lambda x, a: 2 * a, rtol=1e-6, atol=1e-6)  # outputs alone
    with pytest.raises(AssertionError, match=r"output 1 differs .*parameter 'X'"):
        profiler.assert_allclose(lambda x, a: (2 * a, x + a), rtol=1e-6, atol=1e-6)


def test_manual_assert_close_hands_both_value_lists_to_the_check(
    fake_backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # TileLang's profiler.manual_assert_close(ref, input_tensors=..., manual_check_prog=...).
    _with_roles(fake_backend, monkeypatch, {"X": "inout"})
    kernel = tl_jit.compile(_accumulate_and_double(1.0), out_idx=-1, target="llvm")
    profiler = kernel.get_profiler()
    seen: list[tuple[int, int]] = []

    def check(got: list[Any], expected: list[Any]) -> None:
        seen.append((len(got), len(expected)))
        np.testing.assert_allclose(np.asarray(got[0]), np.asarray(expected[0]))

    profiler.manual_assert_close(lambda x, a: 2 * a, manual_check_prog=check)
    with pytest.raises(AssertionError, match="Not equal"):
        profiler.manual_assert_close(lambda x, a: 3 * a, manual_check_prog=check)
    assert seen == [(1, 1), (1, 1)]
    with pytest.raises(TypeError, match="manual_check_prog: expected a callable"):
        profiler.manual_assert_close(lambda x, a: 2 * a)
    # TileLang's profiler.func and profiler._get_inputs() as its examples call them.
    assert profiler.func is kernel
    assert len(profiler._get_inputs()) == 2
    with pytest.raises(NotImplementedError, match="with_output"):
        profiler._get_inputs(with_output=True)


def test_assert_allclose_refuses_a_kernel_that_writes_nothing(fake_backend: Any) -> None:
    kernel = tl_jit.compile(_scale_into(3.0), target="llvm")  # every role "input"
    with pytest.raises(ValueError, match="ref_fn: expected kernel 'scale_into' to write"):
        kernel.get_profiler().assert_allclose(lambda out, a: a * 3)


def test_a_reference_returning_none_is_named(fake_backend: Any) -> None:
    # It said "... ref_fn has ()" (the shape of None as an array).
    kernel = tl_jit.compile(fake_backend.vadd, out_idx=[-1], target="llvm")
    with pytest.raises(TypeError, match=r"got None \(ref_fn returned None: a missing return"):
        kernel.get_profiler().assert_allclose(lambda a, b: None)


def test_a_dim_the_kernel_does_not_have_is_refused_as_tl_bench_refuses_it(
    fake_backend: Any,
) -> None:
    # get_profiler(dims={"zz": 4}) was ignored; tl bench --dim zz=4 said "it would be ignored".
    fixed = tl_jit.compile(fake_backend.vadd, out_idx=[-1], target="llvm")
    message = r"dims\['zz'\]: kernel 'vadd' has no symbolic dim 'zz' \(its symbolic dims: \[\]\)"
    with pytest.raises(ValueError, match=message):
        fixed.get_profiler(dims={"zz": 4})
    with pytest.raises(ValueError, match=message):
        fixed.get_profiler().make_inputs(dims={"zz": 4})
    sized = tl_jit.compile(fake_backend.vadd_n, out_idx=[-1], target="llvm")
    with pytest.raises(
        ValueError, match=r"'vadd_n' has no symbolic dim 'm' \(its symbolic dims: \['n'\]\)"
    ):
        sized.get_profiler(dims={"n": 4, "m": 4})
    assert sized.get_profiler(dims={"n": 4}).make_inputs()[0].shape == (4,)


def test_autotune_checks_an_in_place_kernel_on_what_it_writes(
    fake_backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _with_roles(fake_backend, monkeypatch, {"Out": "inout"})

    @tl_jit.autotune(
        configs=[{"factor": 0.5}, {"factor": 4.0}],
        warmup=1,
        rep=2,
        ref_prog=lambda out, a: a * 4.0,
        max_workers=1,
    )
    @tl_jit.jit(target="llvm")
    def scale_into(factor: float) -> Any:
        return _scale_into(factor)

    with pytest.warns(tl_jit.autotuner.AutotuneWarning, match="parameter 'Out'"):
        best = scale_into()
    assert best.config == {"factor": 4.0}


def test_a_bool_scalar_parameter_gets_true(fake_backend: Any) -> None:
    from tvm.script import tirx as T

    @T.prim_func
    def masked(A: T.Buffer((16,), "float32"), flag: T.bool, C: T.Buffer((16,), "float32")):
        T.func_attr({"tir.noalias": True, "global_symbol": "masked"})
        for i in range(16):
            C[i] = T.if_then_else(flag, A[i], T.float32(0.0))

    kernel = tl_jit.compile(masked, out_idx=-1, target="llvm")
    assert [p.dtype for p in kernel.params] == ["float32", "bool", "float32"]
    profiler = kernel.get_profiler()
    inputs = profiler.make_inputs()
    assert inputs[1] is True
    assert isinstance(profiler.do_bench(warmup=1, rep=1), float)  # the runtime takes it
    profiler.assert_allclose(lambda a, flag: a, rtol=0, atol=0)


def _refuse_allocation(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("an input was allocated before the sizes were checked")


def test_an_input_the_kernel_cannot_index_is_refused_before_anything_is_allocated(
    fake_backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # tl bench --dim n=2147483648 allocated 2 x 8 GiB and was OOM-killed.
    import tl_jit.profiler

    monkeypatch.setattr(tl_jit.profiler, "random_array", _refuse_allocation)
    kernel = tl_jit.compile(fake_backend.vadd_n, out_idx=-1, target="llvm")
    message = (
        r"dims\['n'\]=2147483648: parameter 'A' of kernel 'vadd_n' would have shape "
        r"\[2147483648\] \(2147483648 elements\); expected at most 2147483647 elements.*32-bit"
    )
    with pytest.raises(ValueError, match=message):
        kernel.get_profiler(dims={"n": 2**31}).make_inputs()
    with pytest.raises(ValueError, match=message):
        kernel.get_profiler().make_inputs(dims={"n": 2**31})
    with pytest.raises(ValueError, match=message):
        kernel.get_profiler(dims={"n": 2**31}).do_bench()


def test_inputs_larger_than_the_available_memory_are_refused_with_their_sizes(
    fake_backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tl_jit.profiler

    kernel = tl_jit.compile(fake_backend.vadd_n, out_idx=-1, target="llvm")
    monkeypatch.setattr(tl_jit.profiler, "available_memory", lambda: 8000)
    assert [a.shape for a in kernel.get_profiler(dims={"n": 1000}).make_inputs()] == [(1000,)] * 2
    monkeypatch.setattr(tl_jit.profiler, "random_array", _refuse_allocation)
    with pytest.raises(
        ValueError,
        match=r"need 8008 bytes \('A' \[1001\] float32: 4004 bytes; 'B' \[1001\] float32: "
        r"4004 bytes\); expected at most the 8000 bytes of memory available",
    ):
        kernel.get_profiler(dims={"n": 1001}).make_inputs()


def test_a_64_bit_indexed_kernel_takes_more_elements_but_not_more_than_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tl_jit.profiler

    monkeypatch.setattr(tl_jit.profiler, "random_array", _refuse_allocation)
    monkeypatch.setattr(tl_jit.profiler, "available_memory", lambda: 1 << 30)
    kernel = types.SimpleNamespace(
        name="wide",
        params=(tl_runtime.ParamSpec("A", "int8", shape=("n",)),),
        out_idx=(),
        manifest=types.SimpleNamespace(index_bits=64, argument_device_types=(1,)),
    )
    with pytest.raises(ValueError, match=r"need 2147483648 bytes .*1073741824 bytes of memory"):
        Profiler(kernel, dims={"n": 2**31}).make_inputs()  # type: ignore[arg-type]


def test_available_memory_is_a_positive_count_of_bytes_here() -> None:
    from tl_jit.profiler_inputs import available_memory as _available_memory

    available = _available_memory()
    assert available is None or (isinstance(available, int) and available > 0)


@pytest.mark.parametrize("quantiles", [0.5, "0.5", {0.5}, 1])
def test_quantiles_that_are_not_a_sequence_are_refused_by_name(
    fake_backend: Any, quantiles: Any
) -> None:
    # quantiles=0.5 gave "'float' object is not iterable".
    with pytest.raises(TypeError, match="quantiles: expected a sequence of numbers"):
        do_bench(lambda: None, rep=1, quantiles=quantiles)
    kernel = tl_jit.compile(fake_backend.vadd, out_idx=[-1], target="llvm")
    with pytest.raises(TypeError, match="quantiles: expected a sequence of numbers"):
        kernel.get_profiler().do_bench(warmup=1, rep=1, quantiles=quantiles)


def test_quantiles_as_a_numpy_array_are_taken() -> None:
    figures = do_bench(lambda: None, warmup=0, rep=1, quantiles=np.array([0.25, 0.75], np.float32))
    assert isinstance(figures, list) and len(figures) == 2


@pytest.mark.parametrize("seed", ["x", -1, True, 1.5, 2.0])
def test_a_seed_that_is_not_a_non_negative_int_is_refused_by_name(
    fake_backend: Any, seed: Any
) -> None:
    kernel = tl_jit.compile(fake_backend.vadd, out_idx=[-1], target="llvm")
    message = "seed: expected a non-negative int or None, got"
    with pytest.raises(ValueError, match=message):
        kernel.get_profiler(seed=seed)
    with pytest.raises(ValueError, match=message):
        kernel.get_profiler().make_inputs(seed=seed)


def test_seeds_none_and_numpy_ints_are_taken(fake_backend: Any) -> None:
    kernel = tl_jit.compile(fake_backend.vadd, out_idx=[-1], target="llvm")
    seeded = kernel.get_profiler(seed=np.int64(7)).make_inputs()
    np.testing.assert_array_equal(seeded[0], kernel.get_profiler(seed=7).make_inputs()[0])
    fresh = kernel.get_profiler(seed=None)
    assert not np.array_equal(fresh.make_inputs()[0], fresh.make_inputs()[0])


def test_generated_numpy_inputs_have_the_declared_alignment() -> None:
    # Small numpy arrays lie at 16-byte boundaries: a written parameter declaring 64 bytes
    # was refused ("expected data aligned to 64 bytes"), a read one copied on every call.
    params = tuple(
        tl_runtime.ParamSpec(f"A{n}", "float32", shape=(n,), alignment=256, role="inout")
        for n in (1, 3, 5, 7, 9, 11, 13)
    )
    kernel = types.SimpleNamespace(
        name="aligned",
        params=params,
        out_idx=(),
        manifest=types.SimpleNamespace(index_bits=32, argument_device_types=(1,)),
    )
    profiler = Profiler(kernel)  # type: ignore[arg-type]
    inputs = profiler.make_inputs()
    assert [a.ctypes.data % 256 for a in inputs] == [0] * len(params)
    assert [a.shape for a in inputs] == [(n,) for n in (1, 3, 5, 7, 9, 11, 13)]
    np.testing.assert_array_equal(inputs[1], Profiler(kernel).make_inputs()[1])  # type: ignore[arg-type]


def test_tilelang_timing_backends_and_input_tensors_are_taken(fake_backend: Any) -> None:
    # TileLang's examples pass backend="cupti" (78 calls) and input_tensors=; both were
    # a TypeError. Every backend times the calls the same way here.
    for backend in ("event", "cupti", "cudagraph"):
        assert isinstance(do_bench(lambda: None, warmup=0, rep=1, backend=backend), float)
    with pytest.raises(ValueError, match=r"backend: expected one of .* got 'nvtx'"):
        do_bench(lambda: None, rep=1, backend="nvtx")
    kernel = tl_jit.compile(fake_backend.vadd, out_idx=[-1], target="llvm")
    profiler = kernel.get_profiler()
    inputs = [np.ones(p.shape, np.float32) for p in kernel.params[:-1]]
    assert isinstance(
        profiler.do_bench(warmup=1, rep=1, backend="cupti", input_tensors=inputs), float
    )
    with pytest.raises(TypeError, match="not both"):
        profiler.do_bench(warmup=1, rep=1, inputs=inputs, input_tensors=inputs)


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2", "bfloat16"])
def test_random_inputs_of_narrow_floats_for_numpy_and_torch(dtype: str) -> None:
    # A float8 kernel's profiler failed: numpy has no float8 name, torch reads no
    # ml_dtypes array (TileLang's mla_decode_kv_fp8 with TensorSupplyType.Randn).
    from tl_jit import TensorSupplyType
    from tl_jit.profiler_inputs import random_array

    rng = np.random.default_rng(0)
    for supply in (None, TensorSupplyType.Randn, TensorSupplyType.Integer):
        array = random_array((8,), dtype, rng, supply=supply)
        assert array.dtype.name == dtype and array.shape == (8,)
        torch = pytest.importorskip("torch")
        tensor = random_array((8,), dtype, rng, like="torch", device=None, supply=supply)
        assert tensor.dtype == getattr(torch, dtype) and tuple(tensor.shape) == (8,)
