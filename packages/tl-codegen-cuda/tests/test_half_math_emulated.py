"""fp16/bf16 math functions on the CUDA lowering (``cuda-widen-half-math``), under the CPU
emulation and nvcc.

TVM's CUDA printer wrote a half-precision math call as the ``h``-function of its name:
``hfmod``, ``hnearbyint``, ``hsinh``, ``hcosh`` do not exist (nvcc: "identifier is
undefined"), TVM's ``htan``/``hatan``/``herf``/``hpow`` exist in device code only, and
``log1p``, ``asin``..``atanh``, ``copysign``, ``atan2``, ``hypot``, ``nextafter``,
``ldexp`` had no CUDA rule at all ("Unresolved call"); ``T.pow`` of two bfloat16
operands and ``T.isnan``/``T.isinf``/``T.isfinite`` of a bfloat16 one were refused when
the kernel was parsed. Now every function is computed in float32 and rounded once to
the half type: each result equals numpy's, computed in float64, rounded to float32 and
then to the half type (ml_dtypes for bfloat16), bit for bit (any NaN for a NaN), on
special values (±0, ±inf, NaN, the largest and smallest values, subnormals, domain
edges) and random ones. One kernel per dtype computes every function (one lowering,
one g++ build, one nvcc build).
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cuda_emulation as emu

import tl_ir.language as T

pytestmark = pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")
N = 64
DTYPES = ("float16", "bfloat16")
NUMPY_TYPES: dict[str, Any] = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}

#: Rows of the unary output, in the kernel's order.
UNARY = (
    "exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
    "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan",
    "asinh", "acosh", "atanh", "erf", "nearbyint", "fabs", "floor", "ceil", "trunc", "round",
)  # fmt: skip
#: Rows of the binary output, in the kernel's order.
BINARY = ("pow", "fmod", "copysign", "atan2", "hypot", "nextafter", "ldexp")
CLASSIFY = ("isnan", "isinf", "isfinite")


def _kernel(dtype: str) -> Any:
    @T.prim_func
    def half_math(
        A: T.Tensor((N,), dtype),
        B: T.Tensor((N,), dtype),
        E: T.Tensor((N,), "int32"),
        U: T.Tensor((len(UNARY), N), dtype),
        V: T.Tensor((len(BINARY), N), dtype),
        C: T.Tensor((len(CLASSIFY), N), "int32"),
    ):
        with T.Kernel(1, threads=N):
            for i in T.Parallel(N):
                U[0, i] = T.exp(A[i])
                U[1, i] = T.exp2(A[i])
                U[2, i] = T.exp10(A[i])
                U[3, i] = T.log(A[i])
                U[4, i] = T.log2(A[i])
                U[5, i] = T.log10(A[i])
                U[6, i] = T.log1p(A[i])
                U[7, i] = T.sqrt(A[i])
                U[8, i] = T.rsqrt(A[i])
                U[9, i] = T.sin(A[i])
                U[10, i] = T.cos(A[i])
                U[11, i] = T.tan(A[i])
                U[12, i] = T.sinh(A[i])
                U[13, i] = T.cosh(A[i])
                U[14, i] = T.tanh(A[i])
                U[15, i] = T.asin(A[i])
                U[16, i] = T.acos(A[i])
                U[17, i] = T.atan(A[i])
                U[18, i] = T.asinh(A[i])
                U[19, i] = T.acosh(A[i])
                U[20, i] = T.atanh(A[i])
                U[21, i] = T.erf(A[i])
                U[22, i] = T.nearbyint(A[i])
                U[23, i] = T.fabs(A[i])
                U[24, i] = T.floor(A[i])
                U[25, i] = T.ceil(A[i])
                U[26, i] = T.trunc(A[i])
                U[27, i] = T.round(A[i])
                V[0, i] = T.pow(A[i], B[i])
                V[1, i] = T.fmod(A[i], B[i])
                V[2, i] = T.copysign(A[i], B[i])
                V[3, i] = T.atan2(A[i], B[i])
                V[4, i] = T.hypot(A[i], B[i])
                V[5, i] = T.nextafter(A[i], B[i])
                V[6, i] = T.ldexp(A[i], E[i])
                C[0, i] = T.if_then_else(T.isnan(A[i]), 1, 0)
                C[1, i] = T.if_then_else(T.isinf(A[i]), 1, 0)
                C[2, i] = T.if_then_else(T.isfinite(A[i]), 1, 0)

    return half_math


def _inputs(dtype: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``A``, ``B`` (of ``dtype``) and the exponents ``E``: special values and pairs
    first, random ones after."""
    info = ml_dtypes.finfo(NUMPY_TYPES[dtype])
    largest, tiny, smallest = (
        float(info.max),
        float(info.smallest_normal),
        float(info.smallest_subnormal),
    )
    inf, nan = math.inf, math.nan
    pairs = [  # (a, b): special cases of the binary functions, every a a special value
        (0.0, 1.0), (-0.0, -1.0), (inf, 0.0), (-inf, 2.0), (nan, 0.0), (1.0, nan),
        (-2.0, 0.5), (0.0, -1.0), (3.0, 0.0), (-7.25, 2.0), (largest, inf), (-largest, -inf),
        (tiny, 0.0), (smallest, 0.0), (-smallest, 1.0), (0.5, 0.5), (-0.5, -0.0),
        (1.0, 1.0), (-1.0, 3.0), (0.999, -1.0), (-0.999, 4.0), (2.5, -2.5), (3.5, 1.0),
        (-2.5, inf), (10.0, 3.0), (100.0, -0.5), (1.5707963, 2.0), (3.1415927, -1.0),
        (12.0, 12.0), (88.5, 1.0), (-11.5, -3.0), (inf, -inf), (-inf, nan), (1e-3, 1e-3),
        (0.333, 7.0), (-0.0, 0.0), (0.0, -0.0), (2.0, 2.0), (-3.0, 3.0), (largest, 0.5),
    ]  # fmt: skip
    rng = np.random.default_rng(7)
    count = N - len(pairs)
    a = np.concatenate([[p[0] for p in pairs], rng.uniform(-8.0, 8.0, count)])
    b = np.concatenate([[p[1] for p in pairs], rng.uniform(-8.0, 8.0, count)])
    exponents = rng.integers(-30, 31, N)
    exponents[:6] = [0, 200, -200, 1, -1, 16]
    kind = NUMPY_TYPES[dtype]
    return a.astype(kind), b.astype(kind), exponents.astype(np.int32)


def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float64)


#: name -> the function in float64 of the float64 operands.
REFERENCE_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "exp": np.exp,
    "exp2": np.exp2,
    "exp10": lambda x: np.power(10.0, x),
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "sqrt": np.sqrt,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "erf": np.vectorize(math.erf, otypes=[np.float64]),
    "nearbyint": np.rint,
    "fabs": np.abs,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "round": np.rint,  # TVM's round: ties to even
}

REFERENCE_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "pow": np.power,
    "fmod": np.fmod,
    "copysign": np.copysign,
    "atan2": np.arctan2,
    "hypot": np.hypot,
}


def _expected_unary(name: str, a: np.ndarray, kind: Any) -> np.ndarray:
    with np.errstate(all="ignore"):
        if name == "rsqrt":  # 1 / sqrt(x), each rounded in float32
            wide = np.float32(1.0) / np.sqrt(a.astype(np.float32))
        else:
            wide = REFERENCE_UNARY[name](_wide(a)).astype(np.float32)
        return wide.astype(kind)


def _expected_binary(name: str, a: np.ndarray, b: np.ndarray, e: np.ndarray, kind: Any) -> Any:
    with np.errstate(all="ignore"):
        if name == "nextafter":  # the neighbour in the half type itself
            return np.nextafter(a, b)
        if name == "ldexp":  # exact in float32, then rounded once
            return np.ldexp(a.astype(np.float32), e).astype(kind)
        return REFERENCE_BINARY[name](_wide(a), _wide(b)).astype(np.float32).astype(kind)


@functools.cache
def _lowered(dtype: str) -> Any:
    return emu.lower_for_cuda(_kernel(dtype))


@functools.cache
def _emulated(dtype: str) -> dict[str, np.ndarray]:
    a, b, e = _inputs(dtype)
    kind = NUMPY_TYPES[dtype]
    arrays = {
        "A": a,
        "B": b,
        "E": e,
        "U": np.zeros((len(UNARY), N), kind),
        "V": np.zeros((len(BINARY), N), kind),
        "C": np.zeros((len(CLASSIFY), N), np.int32),
    }
    emu.emulate(_kernel(dtype), arrays, sources=_lowered(dtype))
    return arrays


def _assert_same(got: np.ndarray, want: np.ndarray, label: str, *operands: np.ndarray) -> None:
    """Bit-identical, except that any NaN matches any NaN."""
    got_nan, want_nan = np.isnan(got.astype(np.float32)), np.isnan(want.astype(np.float32))
    same = np.where(want_nan, got_nan, got.view(np.uint16) == want.view(np.uint16))
    if not same.all():
        bad = np.flatnonzero(~same)[:8]
        rows = [
            f"  {tuple(float(o[i]) for o in operands)}: got {float(got[i])!r}, "
            f"want {float(want[i])!r}"
            for i in bad
        ]
        raise AssertionError(f"{label}: {(~same).sum()} of {got.size} differ\n" + "\n".join(rows))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", UNARY)
def test_unary_half_math_is_float32_rounded_once(name: str, dtype: str) -> None:
    arrays = _emulated(dtype)
    a = arrays["A"]
    want = _expected_unary(name, a, NUMPY_TYPES[dtype])
    _assert_same(arrays["U"][UNARY.index(name)], want, f"{dtype} {name}", a)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", BINARY)
def test_binary_half_math_is_float32_rounded_once(name: str, dtype: str) -> None:
    arrays = _emulated(dtype)
    a, b, e = arrays["A"], arrays["B"], arrays["E"]
    want = _expected_binary(name, a, b, e, NUMPY_TYPES[dtype])
    second = e if name == "ldexp" else b
    _assert_same(arrays["V"][BINARY.index(name)], want, f"{dtype} {name}", a, second)


@pytest.mark.parametrize("dtype", DTYPES)
def test_classification_of_half_values(dtype: str) -> None:
    arrays = _emulated(dtype)
    wide = arrays["A"].astype(np.float32)
    for row, test in enumerate((np.isnan, np.isinf, np.isfinite)):
        np.testing.assert_array_equal(arrays["C"][row], test(wide).astype(np.int32))


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_source_calls_float32_math_and_compiles(dtype: str, tmp_path: Path) -> None:
    source = _lowered(dtype).files["main.cu"]
    body = source[source.index('extern "C" __global__') :]
    for call in ("expf(", "fmodf(", "sinhf(", "log1pf(", "atan2f(", "ldexpf(", "powf("):
        assert call in body, call
    for call in ("hexp(", "hfmod(", "hsinh(", "htan(", "hpow(", "hnearbyint("):
        assert call not in body, call
    if not emu.check_nvcc_builds(source, tmp_path):
        pytest.skip("nvcc is not installed here")


def test_vector_nextafter_is_refused_by_name() -> None:
    from tvm import tirx

    from tl_codegen_cuda.half_math import widen_half_math

    x = tirx.Var("x", "float16x4")
    call = tirx.call_intrin("float16x4", "tirx.nextafter", x, x)
    with pytest.raises(NotImplementedError, match=r"T.nextafter on float16x4 vectors"):
        widen_half_math(tirx.Evaluate(call))
