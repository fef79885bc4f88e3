"""`cpu-exact-float-constants`: float constants reach gcc exactly (TVM prints seven digits)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import tvm
from tvm import tirx

from tl_codegen_cpu.c_patches import insert_exact_float_constants
from tl_codegen_cpu.passes.exact_float_constants import (
    exact_constant_marker,
    exact_float_constants,
    hex_float_literal,
    printed_as_by_c,
)


def test_seven_digits_lose_what_the_marker_keeps() -> None:
    ln2_high = 0.693145751953125  # exact in float32, nine digits needed
    assert printed_as_by_c(ln2_high, "float32") != ln2_high
    assert printed_as_by_c(0.5, "float32") == 0.5 and printed_as_by_c(1e-5, "float64") == 1e-5
    marker = exact_constant_marker(ln2_high, "float32")
    assert marker == "tl_exact_f32_3f317200"
    assert hex_float_literal(marker) == "0x1.62e4000000000p-1f"
    tenth = exact_constant_marker(0.1, "float64")
    assert float.fromhex(hex_float_literal(tenth)) == 0.1
    subnormal = float(np.float32(1e-45))
    assert float.fromhex(hex_float_literal(exact_constant_marker(-subnormal, "float32"))[:-1]) == (
        -subnormal
    )


def test_bad_markers_and_dtypes_are_named() -> None:
    with pytest.raises(ValueError, match="dtype must be float32 or float64, got float16"):
        exact_constant_marker(1.0, "float16")
    with pytest.raises(ValueError, match="not an exact-constant marker"):
        hex_float_literal("tl_exact_f32_123")


def _store(value: Any) -> tirx.Stmt:
    buffer = tirx.decl_buffer((1,), str(value.ty.dtype), name="A")
    return tirx.BufferStore(buffer, value, [0])


def test_only_lossy_finite_constants_become_marker_calls() -> None:
    lossy = exact_float_constants(_store(tirx.const(0.1234567890123, "float64")))
    assert isinstance(lossy, tirx.BufferStore) and isinstance(lossy.value, tvm.ir.Call)
    assert str(lossy.value.ty.dtype) == "float64"
    for kept in (tirx.const(0.25, "float32"), tirx.const(math.inf, "float32")):
        stmt = _store(kept)
        assert exact_float_constants(stmt).same_as(stmt)
    # A float32 constant is judged as the float32 it is (TVM keeps a double).
    stmt = _store(tirx.const(0.1, "float32"))
    assert printed_as_by_c(float(np.float32(0.1)), "float32") == float(np.float32(0.1))
    assert exact_float_constants(stmt).same_as(stmt)


def test_the_c_patch_writes_literals_and_drops_declarations() -> None:
    source = (
        "TVM_DLL float tl_exact_f32_3f317200();\n"
        "TVM_DLL double tl_exact_f64_3fb999999999999a();\n"
        "  x = y * tl_exact_f32_3f317200() + tl_exact_f64_3fb999999999999a();\n"
    )
    assert insert_exact_float_constants(source) == (
        "  x = y * (0x1.62e4000000000p-1f) + (0x1.999999999999ap-4);\n"
    )


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_a_nine_digit_scale_is_the_same_number_on_both_paths(target: str) -> None:
    import tl_ir.language as T
    import tl_jit

    scale = 0.125 * 1.44269504  # the softmax scale of TileLang's attention examples
    precise = 0.1234567890123

    @T.prim_func
    def main(
        A: T.Tensor((64,), "float32"),
        D: T.Tensor((64,), "float64"),
        B: T.Tensor((64,), "float32"),
        E: T.Tensor((64,), "float64"),
    ):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                B[i] = A[i] * scale
                E[i] = D[i] + T.float64(precise)

    kernel = tl_jit.compile(main, out_idx=[2, 3], target=target)
    b, e = kernel(np.ones(64, np.float32), np.zeros(64, np.float64))
    np.testing.assert_array_equal(b, np.full(64, np.float32(scale)))
    np.testing.assert_array_equal(e, np.full(64, precise))
