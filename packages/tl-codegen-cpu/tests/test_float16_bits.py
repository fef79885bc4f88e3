"""`cpu-float16-bits`: fp16 <-> fp32 casts on ``c`` as bit arithmetic, exact against numpy."""

from __future__ import annotations

from typing import Any

import numpy as np

import tl_ir.language as T
import tl_jit

ROWS = 256
ROW = 256  # ROWS * ROW = 65536: every fp16 code once


def _convert_both_ways() -> Any:
    @T.prim_func
    def main(
        H: T.Tensor((ROWS, ROW), "float16"),
        F: T.Tensor((ROWS, ROW), "float32"),
        Widened: T.Tensor((ROWS, ROW), "float32"),
        Narrowed: T.Tensor((ROWS, ROW), "float16"),
    ):
        with T.Kernel(ROWS, threads=ROW) as bx:
            for i in T.Parallel(ROW):
                # Arithmetic, not a bare copy: a pure row conversion is a tl_cvt call.
                Widened[bx, i] = T.Cast("float32", H[bx, i]) * 1.0 + 0.0
                Narrowed[bx, i] = T.Cast("float16", F[bx, i] * 1.0 + 0.0)

    return main


def _narrowing_inputs() -> np.ndarray:
    rng = np.random.default_rng(3)
    f16_max = 65504.0
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, 65519.99, 65520.0, f16_max, 1e6, -1e6]
    edges += [2.0**-14, 2.0**-24, 2.0**-25, 2.0**-25 * 1.5, 2.0**-26, 1e-30, 2.0**-149]
    # Exact ties between neighbouring fp16 values, at every exponent (ties to even).
    codes = np.arange(0, 0x7BFF, 37, dtype=np.uint16)
    low = codes.view(np.float16).astype(np.float64)
    high = (codes + 1).view(np.float16).astype(np.float64)
    ties = ((low + high) / 2).astype(np.float32)
    values = np.concatenate(
        [
            np.array(edges, np.float32),
            ties,
            -ties,
            rng.standard_normal(20000).astype(np.float32) * np.float32(1000.0),
            rng.uniform(-7e-5, 7e-5, 20000).astype(np.float32),
            rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32).view(np.float32),
        ]
    )
    return np.resize(values, (ROWS, ROW))


def test_c_converts_every_fp16_code_and_rounds_like_numpy() -> None:
    kernel = tl_jit.compile(_convert_both_ways(), out_idx=[2, 3], target="c")
    codes = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    f = _narrowing_inputs()
    widened, narrowed = kernel(codes.reshape(ROWS, ROW), f)
    with np.errstate(invalid="ignore", over="ignore"):
        want_wide = codes.astype(np.float32).reshape(ROWS, ROW)
        want_narrow = f.astype(np.float16)
    nan = np.isnan(want_wide)
    np.testing.assert_array_equal(np.isnan(widened), nan)
    np.testing.assert_array_equal(widened.view(np.uint32)[~nan], want_wide.view(np.uint32)[~nan])
    nan = np.isnan(want_narrow)
    np.testing.assert_array_equal(np.isnan(narrowed), nan)
    np.testing.assert_array_equal(narrowed.view(np.uint16)[~nan], want_narrow.view(np.uint16)[~nan])


def test_only_varying_casts_in_innermost_loops_become_bits() -> None:
    source = tl_jit.compile(_convert_both_ways(), out_idx=[2, 3], target="c").get_kernel_source()
    assert "f16_code" in source and "f32_bits" in source
    assert "(tl_u16_alias*)" in source  # may_alias views of the fp16 memory


def _integers_to_half(dtype: str) -> Any:
    @T.prim_func
    def main(Ints: T.Tensor((ROWS, ROW), dtype), H: T.Tensor((ROWS, ROW), "float16")):
        with T.Kernel(ROWS, threads=ROW) as bx:
            for i in T.Parallel(ROW):
                H[bx, i] = T.Cast("float16", Ints[bx, i])

    return main


def test_integer_to_fp16_casts_round_like_numpy_without_a_library_call() -> None:
    # Every int16, and int32 values around fp16's largest finite value and overflow.
    for dtype, values in (
        ("int16", np.arange(-32768, 32768, dtype=np.int64)),
        (
            "int32",
            np.concatenate(
                [
                    np.arange(65400, 65600),
                    -np.arange(65400, 65600),
                    [2**24 - 1, 2**24, 2**24 + 1, 2**31 - 1, -(2**31), 2049, 2051, 4097, 4099],
                    np.random.default_rng(4).integers(-(2**31), 2**31 - 1, 65536 - 409),
                ]
            ),
        ),
    ):
        kernel = tl_jit.compile(_integers_to_half(dtype), out_idx=[1], target="c")
        assert "__truncdfhf2" not in kernel.get_kernel_source()
        assert "f32_bits" in kernel.get_kernel_source()
        ints = values.astype(dtype).reshape(ROWS, ROW)
        with np.errstate(over="ignore"):
            want = ints.astype(np.float16)
        np.testing.assert_array_equal(kernel(ints).view(np.uint16), want.view(np.uint16))
