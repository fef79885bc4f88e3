"""fp16 on the C path: the hardware (or exact software) widening conversions of the
half-input micro-kernel, and fp16 GEMMs on c bit-identical to numpy's round-to-nearest-even."""

from __future__ import annotations

import ctypes
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import tvm
from cpu_passes_testing import build_prepared_c
from cpu_reference_kernels import tile_gemm_module

from tl_codegen_cpu import build_llvm
from tl_codegen_cpu.passes import C_MICROKERNEL_PRELUDE
from tl_codegen_cpu.passes.half_conversions import C_HALF_GEMM_PRELUDE

_PROBE = r"""
#include <stdint.h>
void widen_f16(const uint16_t* in, float* out, int n) {
  for (int i = 0; i < n; i += 16) {
    tl_f32x16 v = tl_f16_to_f32x16(in + i);
    memcpy(out + i, &v, sizeof v);
  }
}
void widen_f16_scalar(const uint16_t* in, float* out, int n) {
  for (int i = 0; i < n; ++i) out[i] = tl_f16_to_f32(in[i]);
}
"""

#: -march=native uses F16C (and AVX-512F) where the CPU has them; x86-64 (baseline)
#: has neither, so the exact integer conversion runs.
_ISAS = {"native": "-march=native", "baseline": "-march=x86-64"}


def _probe_library(tmp_path: Path, isa: str) -> ctypes.CDLL:
    source = tmp_path / f"probe_{isa}.c"
    source.write_text(
        "#include <stdint.h>\n" + C_MICROKERNEL_PRELUDE + C_HALF_GEMM_PRELUDE + _PROBE
    )
    library = tmp_path / f"probe_{isa}.so"
    compiler = os.environ.get("CC") or "gcc"
    subprocess.run(
        [compiler, "-O2", _ISAS[isa], "-shared", "-fPIC", str(source), "-o", str(library)],
        check=True,
        capture_output=True,
    )
    return ctypes.CDLL(str(library))


def _widen(library: ctypes.CDLL, name: str, bits: np.ndarray) -> np.ndarray:
    out = np.empty(bits.size, np.float32)
    getattr(library, name)(
        bits.ctypes.data_as(ctypes.c_void_p), out.ctypes.data_as(ctypes.c_void_p), bits.size
    )
    return out


ALL_HALF_BITS = np.arange(1 << 16, dtype=np.uint16)


@pytest.mark.parametrize("isa", list(_ISAS))
@pytest.mark.parametrize("name", ["widen_f16", "widen_f16_scalar"])
def test_fp16_widening_is_exact_for_every_bit_pattern(name: str, isa: str, tmp_path: Path) -> None:
    # Every fp16 value (zeros, subnormals, normals, infinities) is exact in fp32;
    # NaNs stay NaNs of the same sign.
    got = _widen(_probe_library(tmp_path, isa), name, ALL_HALF_BITS)
    want = ALL_HALF_BITS.view(np.float16).astype(np.float32)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))
    np.testing.assert_array_equal(np.signbit(got[nan]), np.signbit(want[nan]))


def _special_operands() -> tuple[np.ndarray, np.ndarray]:
    # Integer-valued operands keep every fp32 sum exact, so the only rounding is the
    # final fp32 -> fp16 store: sums like 2049 and 2051 are ties/near-ties (round to
    # nearest even), sums past 65504 overflow to inf, subnormal operands (2**-24
    # multiples) give exact small products, and an inf operand gives inf or NaN.
    m, n, k = 32, 32, 16
    rng = np.random.default_rng(3)
    a = rng.integers(-3, 4, (m, k)).astype(np.float32)
    b = rng.integers(-3, 4, (k, n)).astype(np.float32)
    a[0, :] = 0
    a[0, 0] = 2049
    b[0, :4] = [1, 3, 40, -40]  # 2049, 6147, 81960 (inf), -81960 (-inf)
    a[1, :] = 0
    a[1, 1] = 2.0**-24  # fp16's smallest subnormal
    b[1, :] = np.arange(n)
    a[2, 2] = np.inf
    return a.astype(np.float16), b.astype(np.float16)


@pytest.mark.parametrize("builder", [build_prepared_c, build_llvm])
def test_fp16_gemm_rounds_to_nearest_even_like_numpy(builder: object, tmp_path: Path) -> None:
    a, b = _special_operands()
    m, k = a.shape
    n = b.shape[1]
    style = "c-vector-extension" if builder is build_prepared_c else "tir"
    mod = tile_gemm_module(m, n, k, 32, 32, 16, dtype="float16", accum_dtype="float32", style=style)
    result = builder(mod, tmp_path)  # type: ignore[operator]
    if builder is build_prepared_c:
        assert "tl_f16_to_f32x" in result.source  # the half-input micro-kernel is used
    lib = tvm.runtime.load_module(str(result.library_path))
    c = tvm.runtime.tensor(np.zeros((m, n), np.float32))
    lib["main"](tvm.runtime.tensor(a), tvm.runtime.tensor(b), c)
    got = c.numpy()
    with np.errstate(invalid="ignore"):  # inf * 0 in the reference: NaN, as expected
        want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = ~np.isnan(want)
    np.testing.assert_array_equal(got[finite], want[finite])
    # And rounded to fp16 the same way numpy does (ties to even, overflow to inf).
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(
            got[finite].astype(np.float16).view(np.uint16),
            want[finite].astype(np.float16).view(np.uint16),
        )
