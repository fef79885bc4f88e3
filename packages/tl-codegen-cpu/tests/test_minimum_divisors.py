"""`cpu-minimum-divisors`: ``//`` and ``%`` by a type's most negative constant."""

from __future__ import annotations

import pytest
from tvm import tirx

from tl_codegen_cpu.passes.minimum_divisors import lower_minimum_divisors


def _store(op: type, dtype: str, divisor: int) -> tirx.Stmt:
    buffer = tirx.decl_buffer((4,), dtype, "O")
    a = tirx.Var("a", dtype)
    return tirx.BufferStore(buffer, op(a, tirx.const(divisor, dtype)), [tirx.const(0, "int32")])


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
@pytest.mark.parametrize("op", [tirx.FloorDiv, tirx.FloorMod])
def test_the_most_negative_divisor_becomes_selects(dtype: str, op: type) -> None:
    minimum = -(1 << (int(dtype[3:]) - 1))
    lowered = lower_minimum_divisors(_store(op, dtype, minimum))
    assert isinstance(lowered.value, tirx.Select)


def test_other_divisors_are_left_alone() -> None:
    stmt = _store(tirx.FloorMod, "int8", -127)
    assert isinstance(lower_minimum_divisors(stmt).value, tirx.FloorMod)
