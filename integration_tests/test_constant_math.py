"""Math functions of constants are computed when the kernel is built (`fold-constant-math`).

TVM left ``T.exp2(T.float16(-3.5))`` a call, which the CPU passes grew into kilobytes of
``Let``-nested constants: two minutes to build ``T.round(T.exp2(T.float16(-3.5)),
"ties-away-from-zero")`` on ``c``, and ``T.tanh(T.sqrt(T.round(T.bfloat16(88.5))))``
stopped TVM's LLVM code ("BF16 needs to be storaged lowered first"). Each expression
here is computed twice by one kernel: of constants (folded) and of the same values read
from a tensor at run time; both must agree, and agree with numpy's value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from tvm import tirx

import tl_jit
import tl_jit.language as T
from tl_passes.fold_constant_math import fold_constant_math

TARGETS = ["c", "llvm"]

#: (name, kernel expression of x, numpy expression of x computed in float32).
EXPRESSIONS: list[tuple[str, Callable[[Any], Any], Callable[[Any], Any], float]] = [
    ("exp2", lambda x: T.exp2(x), np.exp2, -3.5),
    ("round(log(exp2))", lambda x: T.round(T.log(T.exp2(x))), lambda x: np.rint(np.log(np.exp2(x))), -3.5),
    ("tanh(sqrt(round))", lambda x: T.tanh(T.sqrt(T.round(x))), lambda x: np.tanh(np.sqrt(np.rint(x))), 88.5),
    ("sigmoid", lambda x: T.sigmoid(x), lambda x: 1 / (1 + np.exp(-x)), 0.75),
    ("pow", lambda x: T.pow(x, x), lambda x: np.power(x, x), 1.5),
    ("log of 0", lambda x: T.log(x - x), lambda x: np.log(x - x), 2.0),
    ("sqrt of -1", lambda x: T.sqrt(-x), lambda x: np.sqrt(-x), 1.0),
]  # fmt: skip

_NUMPY = {
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "float32": np.float32,
    "float64": np.float64,
}


def _kernel(dtype: str) -> Any:
    n = len(EXPRESSIONS)
    constants = [T.cast(value, dtype) for _, _, _, value in EXPRESSIONS]

    @T.macro
    def both(X: Any, Folded: Any, Computed: Any, k: int) -> None:
        Folded[k] = EXPRESSIONS[k][1](constants[k])
        Computed[k] = EXPRESSIONS[k][1](X[k])

    @T.prim_func
    def main(
        X: T.Tensor((n,), dtype), Folded: T.Tensor((n,), dtype), Computed: T.Tensor((n,), dtype)
    ):
        with T.Kernel(1, threads=1):
            both(X, Folded, Computed, 0)
            both(X, Folded, Computed, 1)
            both(X, Folded, Computed, 2)
            both(X, Folded, Computed, 3)
            both(X, Folded, Computed, 4)
            both(X, Folded, Computed, 5)
            both(X, Folded, Computed, 6)

    return main


def _expected(dtype: str) -> np.ndarray:
    compute = np.float64 if dtype == "float64" else np.float32
    with np.errstate(all="ignore"):
        values = [numpy_fn(compute(value)) for _, _, numpy_fn, value in EXPRESSIONS]
    return np.array(values, dtype=compute).astype(_NUMPY[dtype])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_math_of_constants_equals_math_at_run_time(dtype: str, target: str) -> None:
    numpy_type = _NUMPY[dtype]
    x = np.array([value for *_, value in EXPRESSIONS], np.float64).astype(numpy_type)
    folded, computed = np.zeros_like(x), np.zeros_like(x)
    tl_jit.compile(_kernel(dtype), target=target)(x, folded, computed)
    expected = _expected(dtype)
    # One ulp of the dtype: the run-time exp/log of float32 are within 2 ulp of float32,
    # which may move a rounding to the narrow dtype by one.
    rtol = {"float16": 1e-3, "bfloat16": 8e-3, "float32": 3e-7, "float64": 1e-15}[dtype]
    for got, what in ((folded, "of constants"), (computed, "at run time")):
        np.testing.assert_allclose(
            got.astype(np.float64), expected.astype(np.float64), rtol=rtol, err_msg=what
        )


def test_the_fold_leaves_no_call_of_constants_and_keeps_others() -> None:
    x = tirx.Var("x", "float16")
    folded_value = tirx.call_intrin("float16", "tirx.exp2", tirx.FloatImm("float16", -3.5))
    kept_value = tirx.call_intrin("float16", "tirx.exp2", x)
    buffer = tirx.decl_buffer((2,), "float16", name="O")
    body = tirx.SeqStmt(
        [
            tirx.BufferStore(buffer, folded_value, [tirx.IntImm("int32", 0)]),
            tirx.BufferStore(buffer, kept_value, [tirx.IntImm("int32", 1)]),
        ]
    )
    first, second = fold_constant_math(body).seq
    assert isinstance(first.value, tirx.FloatImm)
    assert float(first.value.value) == float(np.float16(np.exp2(np.float32(-3.5))))
    assert second.value.same_as(kept_value)
