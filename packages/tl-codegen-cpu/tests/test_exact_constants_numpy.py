"""Float constants whose seven-digit print does not round-trip (``2**-32``, ``1/3``, the
largest subnormal) reach the ``c`` kernel exactly, as hexadecimal literals: c and llvm
agree with numpy bit for bit; constants that round-trip (``0.1``) keep TVM's print."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

import tl_ir.language as T
import tl_runtime
from tl_backend_api import build_artifact, create_backend_context, lower_to_sources

TARGETS = ("c", "llvm")
N = 8
#: Per dtype: the constants, and how the c source spells each (a hexadecimal literal
#: of exactly that value, or TVM's own print for one that round-trips).
CONSTANTS: dict[str, list[tuple[float, str]]] = {
    "float32": [
        (2.0**-32, "0x1p-32f"),
        (0.1, "1.000000e-01f"),  # round-trips: TVM's print is kept
        (1.0 / 3.0, "0x1.555556p-2f"),
        (2.0**-126 - 2.0**-149, "0x1.fffffcp-127f"),  # largest float32 subnormal
    ],
    "float64": [
        (2.0**-32, "0x1p-32"),
        (0.1, "1.000000e-01"),
        (1.0 / 3.0, "0x1.5555555555555p-2"),
        (2.0**-1022 - 2.0**-1074, "0x0.fffffffffffffp-1022"),  # largest float64 subnormal
    ],
}
_HEX_LITERAL = re.compile(r"0x[0-9a-fA-F]+(?:\.[0-9a-fA-F]*)?p[-+]?[0-9]+")
INPUT = [1.0, 3.0, -0.5, 7.25, 1.0e6, 2.0**20 + 1.0, -3.0e-3, 0.75]


def scaled_by_constants(dtype: str) -> Any:
    c0, c1, c2, c3 = (value for value, _ in CONSTANTS[dtype])

    @T.prim_func
    def main(
        A: T.Tensor((N,), dtype),
        O0: T.Tensor((N,), dtype),
        O1: T.Tensor((N,), dtype),
        O2: T.Tensor((N,), dtype),
        O3: T.Tensor((N,), dtype),
    ):
        with T.Kernel(1, threads=N) as _:
            for i in T.Parallel(N):
                O0[i] = A[i] * T.cast(c0, dtype)
                O1[i] = A[i] * T.cast(c1, dtype)
                O2[i] = A[i] * T.cast(c2, dtype)
                O3[i] = A[i] * T.cast(c3, dtype)

    return main


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_c_source_spells_each_constant_exactly(dtype: str) -> None:
    sources = lower_to_sources(create_backend_context("c"), scaled_by_constants(dtype))
    (text,) = sources.files.values()
    hex_values = {float.fromhex(token) for token in _HEX_LITERAL.findall(text)}
    for value, literal in CONSTANTS[dtype]:
        if literal.startswith("0x"):
            assert float(np.array(value, dtype=dtype)) in hex_values, (value, sorted(hex_values))
        else:
            assert literal in text, (value, literal)
    assert "2.328306e-10" not in text and "3.333333e-01" not in text


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_constants_multiply_bit_for_bit_like_numpy(dtype: str, target: str, tmp_path: Path) -> None:
    kernel = tl_runtime.load(
        build_artifact(create_backend_context(target), scaled_by_constants(dtype), tmp_path)
    )
    a = np.array(INPUT, dtype=dtype)
    outputs = [np.zeros(N, dtype=dtype) for _ in range(4)]
    kernel(a, *outputs)
    for (value, _), out in zip(CONSTANTS[dtype], outputs, strict=True):
        expected = a * np.array(value, dtype=dtype)
        np.testing.assert_array_equal(out.view(f"u{a.itemsize}"), expected.view(f"u{a.itemsize}"))
