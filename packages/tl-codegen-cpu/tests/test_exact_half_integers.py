"""`cpu-legalize-half-precision`: an integer cast to fp16 whose value provably fits
fp16's exact integers is widened straight to float32 (no fp16 round trip)."""

from __future__ import annotations

import numpy as np
import pytest
from tvm import tirx

from tl_codegen_cpu.passes.legalize_half_precision import (
    EXACT_INTEGERS,
    integer_magnitude,
    legalize_half_precision,
)

X = tirx.Var("x", "int32")
Q = tirx.Var("q", "int8")
H = tirx.Var("h", "float16")


def _nibble(shift: int) -> tirx.PrimExpr:
    """A signed 4-bit value of a packed byte, as TileLang's dequantizing GEMV writes it."""
    return ((tirx.Cast("int32", Q) >> shift) & 15) << 28 >> 28


@pytest.mark.parametrize(
    ("expr", "magnitude"),
    [
        (_nibble(4), 8),  # sign extension of the low 4 bits
        ((X & 15) - 8, 8),
        (tirx.Cast("int32", Q), 128),  # a widening cast keeps the narrow range
        (tirx.Cast("int32", Q) >> 2, 32),
        (tirx.Cast("int8", X), 128),  # a narrowing cast wraps into its own range
        (X, 1 << 31),
        (X << 3, 1 << 31),  # may overflow: only the dtype's range
        ((X & 15) + (X & 15), 30),
    ],
)
def test_integer_magnitude_is_sound(expr: tirx.PrimExpr, magnitude: int) -> None:
    assert integer_magnitude(expr) == magnitude


def test_fp16_and_bf16_hold_the_integers_the_bound_allows() -> None:
    values = np.arange(-EXACT_INTEGERS["float16"], EXACT_INTEGERS["float16"] + 1)
    assert np.array_equal(values.astype(np.float16).astype(np.int64), values)
    assert int(np.float16(EXACT_INTEGERS["float16"] + 1)) != EXACT_INTEGERS["float16"] + 1

    def significant_bits(value: int) -> int:
        return (value >> ((value & -value).bit_length() - 1)).bit_length()

    # bfloat16 carries 8 significant bits (numpy has no bfloat16).
    assert all(significant_bits(v) <= 8 for v in range(1, EXACT_INTEGERS["bfloat16"] + 1))
    assert significant_bits(EXACT_INTEGERS["bfloat16"] + 1) == 9


def test_a_dequantized_operand_is_widened_without_the_fp16_round_trip() -> None:
    out = tirx.decl_buffer((1,), "float16", name="out")
    product = H * tirx.Cast("float16", _nibble(4))
    unbounded = H * tirx.Cast("float16", X)
    stmt = tirx.SeqStmt(
        [tirx.BufferStore(out, product, [0]), tirx.BufferStore(out, unbounded, [0])]
    )
    first, second = legalize_half_precision(stmt, ("float16",)).seq
    # The product itself still rounds to fp16; the nibble goes straight to float32.
    assert isinstance(first.value, tirx.Cast) and str(first.value.ty.dtype) == "float16"
    nibble_operand = first.value.value.b
    assert isinstance(nibble_operand, tirx.Cast)
    assert str(nibble_operand.value.ty.dtype) == "int32"
    # An int32 of unknown size may round in fp16: the round trip stays.
    kept = second.value.value.b
    assert str(kept.value.ty.dtype) == "float16"
