"""``T.ceildiv`` is exact for every integer: TVM's ``(a + b - 1) // b`` overflowed int32
near 2**31 (a negative grid, loops that ran no iteration)."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tvm import tirx

import tl_ir
import tl_ir.language as T

INT32 = st.integers(-(2**31), 2**31 - 1)


@given(INT32, INT32.filter(lambda b: b != 0))
def test_constants_divide_exactly(a, b):
    assert T.ceildiv(a, b) == math.ceil(Fraction(a, b))
    assert T.ceildiv(a, b) == -(-a // b)
    assert type(T.ceildiv(np.int64(a), b)) is int


@pytest.mark.parametrize("b", [3, 256, 2**20])
def test_an_int32_expression_never_adds_b_minus_one(b):
    # (n - 1) // b + 1: no intermediate exceeds n (n + b - 1 did), and only + - // so a
    # launch grid stays an expression the runtime evaluates.
    expr = T.ceildiv(tirx.Var("n", "int32"), b)
    assert isinstance(expr, tirx.Add) and isinstance(expr.a, tirx.FloorDiv)
    assert isinstance(expr.a.a, tirx.Sub)


def _evaluate(expr, var, value):
    import tvm

    folded = tvm.sym.Analyzer().simplify(tirx.Let(var, tirx.const(value, var.dtype), expr))
    return int(folded)


@pytest.mark.parametrize("n", [0, 1, 2, 63, 64, 65, 2**31 - 1])
@pytest.mark.parametrize("b", [1, 7, 64])
@pytest.mark.parametrize("dtype", ["int32", "uint32"])
def test_the_expressions_divide_exactly(n, b, dtype):
    var = tirx.Var("n", dtype)
    assert _evaluate(T.ceildiv(var, b), var, n) == -(-n // b)


@pytest.mark.parametrize("n", [-7, 0, 7, 8])
def test_a_negative_constant_divisor_divides_exactly(n):
    var = tirx.Var("n", "int32")
    assert _evaluate(T.ceildiv(var, -3), var, n) == -(-n // -3)


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [
        (8, 16.0, "expected b to be an integer or an integer expression, got float 16.0"),
        (8, True, "expected b to be an integer or an integer expression, got bool True"),
        (8.0, 2, "expected a to be an integer or an integer expression, got float 8.0"),
        (8, 0, "expected b to be non-zero"),
    ],
)
def test_non_integers_and_zero_are_refused_by_operand(a, b, message):
    with pytest.raises(tl_ir.KernelTypeError, match=message):
        T.ceildiv(a, b)
