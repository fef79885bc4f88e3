"""`cpu-vectorize-exp`: the IR it writes and its accuracy against numpy (ulps, edge cases)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import tvm
import tvm_ffi
from cpu_passes_testing import make_pass, run_on_host
from tvm import tirx

from tl_codegen_cpu.passes import CpuVectorizeExpPass, fast_exp_f32
from tl_codegen_cpu.passes.vectorize_exp import LN2_HIGH, LN2_LOW, POLY_COEFFICIENTS
from tl_passes import PassContext

LANES = 16
SIZE = 4096


def _elementwise(fn: Callable[[Any], Any], dtype: str = "float32") -> tirx.PrimFunc:
    """``B[k] = fn(A[k])`` over a vectorized inner loop of `LANES`."""
    a = tirx.decl_buffer((SIZE,), dtype, name="A")
    b = tirx.decl_buffer((SIZE,), dtype, name="B")
    i = tirx.Var("i", "int32")
    j = tirx.Var("j", "int32")
    index = i * LANES + j
    body: tirx.Stmt = tirx.BufferStore(b, fn(tirx.BufferLoad(a, [index])), [index])
    body = tirx.For(j, 0, LANES, tirx.ForKind.VECTORIZED, body)
    body = tirx.For(i, 0, SIZE // LANES, tirx.ForKind.SERIAL, body)
    func = tirx.PrimFunc([a, b], body)
    return func.with_attrs({"global_symbol": "main", "tir.noalias": True})


def _call_names(node: Any) -> list[str]:
    names: list[str] = []

    def visit(call: Any) -> None:
        names.append(str(getattr(call.op, "name", "")))

    tvm_ffi.structural_walk(node, (tvm.ir.Call, visit), order="post")
    return names


def _rewritten(func: tirx.PrimFunc) -> tirx.PrimFunc:
    mod = CpuVectorizeExpPass().run(tvm.IRModule({"main": func}), PassContext())
    result = mod["main"]
    assert isinstance(result, tirx.PrimFunc)
    return result


def _edge_inputs() -> np.ndarray:
    rng = np.random.default_rng(7)
    special = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-30, -1e-30, 1e-45]
    near_limits = [88.72, 88.7228, 88.72284, 88.7229, 89.0, 128.0, 127.99, 128.5, 200.0]
    near_limits += [-87.33, -87.34, -100.0, -103.27, -103.28, -103.97, -104.0, -126.0, -149.0]
    near_limits += [-149.5, -150.0, -151.0, -1e9, 1e9, np.finfo(np.float32).max]
    values = np.concatenate(
        [
            special,
            near_limits,
            rng.uniform(-160.0, 160.0, 1500),
            rng.uniform(-110.0, 95.0, 1500),
            rng.uniform(-1.0, 1.0, 1000),
        ]
    )
    return np.resize(values.astype(np.float32), SIZE)


def test_ln2_split_is_exact_for_every_reduction_multiple() -> None:
    # n * LN2_HIGH must be exact in float32 for |n| <= 256: few significant bits.
    assert float(LN2_HIGH * 2**16).is_integer() and LN2_HIGH * 2**16 < 2**16
    assert abs(LN2_HIGH + LN2_LOW - np.log(2.0)) < 1e-12
    assert len(POLY_COEFFICIENTS) == 5


def test_float32_exp_calls_become_call_free_arithmetic() -> None:
    func = _rewritten(_elementwise(tirx.exp))
    names = _call_names(func.body)
    assert "tirx.exp" not in names and "tirx.exp2" not in names
    text = func.script()
    assert "T.reinterpret" in text and "exp_n >> 1" in text
    # Every later pass of the c path accepts it, and TVM's C printer prints it.
    tvm.compile(func, target="c")


def test_exp2_is_rewritten_and_other_dtypes_are_left_to_libm() -> None:
    assert "tirx.exp2" not in _call_names(_rewritten(_elementwise(tirx.exp2)).body)
    f64 = _elementwise(tirx.exp, dtype="float64")
    assert _rewritten(f64).same_as(f64)
    plain = _elementwise(lambda x: x + tirx.const(1.0, "float32"))
    assert _rewritten(plain).same_as(plain)


def test_the_pass_is_registered_and_respects_its_kinds() -> None:
    assert make_pass("cpu-vectorize-exp").name == "cpu-vectorize-exp"
    mod = tvm.IRModule({"main": _elementwise(tirx.exp)})
    skipped = CpuVectorizeExpPass(kinds=("c",)).run(
        mod, PassContext(target=tvm.target.Target("llvm"))
    )
    assert skipped is mod


def test_fast_exp_names_a_wrong_dtype() -> None:
    with pytest.raises(ValueError, match="x must be float32, got float64"):
        fast_exp_f32(tirx.Var("x", "float64"))


@pytest.mark.parametrize(
    ("intrinsic", "reference"), [(tirx.exp, np.exp), (tirx.exp2, np.exp2)], ids=["exp", "exp2"]
)
def test_accuracy_within_two_ulp_with_inf_zero_and_nan_like_numpy(
    intrinsic: Callable[[Any], Any], reference: Callable[[Any], Any]
) -> None:
    x = _edge_inputs()
    (_, out) = run_on_host(_rewritten(_elementwise(intrinsic)), x, np.zeros_like(x))
    with np.errstate(over="ignore"):
        exact = reference(x.astype(np.float64))
        rounded = exact.astype(np.float32)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(rounded))
    np.testing.assert_array_equal(np.isposinf(out), np.isposinf(rounded))
    np.testing.assert_array_equal(out == 0, rounded == 0)
    finite = np.isfinite(rounded)
    ulp = np.spacing(np.abs(rounded[finite])).astype(np.float64)
    error_ulp = np.abs(out[finite].astype(np.float64) - exact[finite]) / ulp
    assert error_ulp.max() <= 2.0, x[finite][error_ulp.argmax()]
    assert np.all(out[finite] >= 0)


_EDGE_BLOCK = 32


def _tile_exp_and_exp2() -> Any:
    """A tile program ``B = exp(A)``, ``C = exp2(A)``, `_EDGE_BLOCK` elements per block."""
    import tl_ir.language as T

    n = 2 * _EDGE_BLOCK

    @T.prim_func
    def main(
        A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")
    ):
        with T.Kernel(2, threads=_EDGE_BLOCK) as bx:
            for i in T.Parallel(_EDGE_BLOCK):
                B[bx * _EDGE_BLOCK + i] = T.exp(A[bx * _EDGE_BLOCK + i])
                C[bx * _EDGE_BLOCK + i] = T.exp2(A[bx * _EDGE_BLOCK + i])

    return main


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_underflow_is_an_exact_zero_and_inf_nan_pass_through_on_both_paths(target: str) -> None:
    # Compiled through the whole CPU pipeline (tl_jit), so both printers and compilers
    # see the rewrite: -inf (a masked attention score) and anything below the underflow
    # threshold give exactly +0, subnormal results are the rounded ones, +inf and NaN
    # come back as they went in.
    import tl_jit

    values = [-np.inf, -1e30, -1e4, -200.0, -151.0, -150.5, -149.2, -104.0, -103.98, -103.9]
    values += [-100.0, -95.0, -90.0, -88.0, -87.0, 0.0, -0.0, 1.0, 88.0, 88.8, 127.9, 200.0]
    values += [np.inf, np.nan, -np.nan]
    x = np.resize(np.array(values, np.float32), 2 * _EDGE_BLOCK)
    kernel = tl_jit.compile(_tile_exp_and_exp2(), out_idx=[1, 2], target=target)
    for out, reference in zip(kernel(x), (np.exp, np.exp2), strict=True):
        with np.errstate(over="ignore", under="ignore"):
            exact = reference(x.astype(np.float64))
            rounded = exact.astype(np.float32)
        np.testing.assert_array_equal(np.isnan(out), np.isnan(x))
        np.testing.assert_array_equal(np.isposinf(out), np.isposinf(rounded))
        zero = rounded == 0
        assert np.all(out[zero] == 0) and not np.any(np.signbit(out[zero]))
        finite = np.isfinite(rounded) & ~zero
        # Within 2 ulp where normal; subnormal results within 2 units of their spacing.
        spacing = np.spacing(np.abs(rounded[finite])).astype(np.float64)
        error = np.abs(out[finite].astype(np.float64) - exact[finite]) / spacing
        assert error.max() <= 2.0, (reference.__name__, x[finite][error.argmax()])
