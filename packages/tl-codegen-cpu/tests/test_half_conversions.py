"""fp16 on the C path: the hardware (or exact software) widening conversions of the
half-input micro-kernel, and fp16 GEMMs on c bit-identical to numpy's round-to-nearest-even."""

from __future__ import annotations

import ctypes
import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tvm
from cpu_passes_testing import build_prepared_c
from cpu_reference_kernels import tile_gemm_module

import tl_ir.language as T
import tl_runtime
from tl_backend_api import build_artifact, create_backend_context, lower_to_sources
from tl_codegen_cpu import build_llvm
from tl_codegen_cpu.c_headers import half_prelude, microkernel_prelude

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
    source.write_text("#include <stdint.h>\n" + microkernel_prelude() + half_prelude() + _PROBE)
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


def _convert_kernel(n: int, src: str, dst: str) -> Any:
    @T.prim_func
    def main(A: T.Tensor((n,), src), B: T.Tensor((n,), dst)):
        with T.Kernel(n // 1024, threads=128) as bx:
            for i in T.Parallel(1024):
                B[bx * 1024 + i] = T.cast(A[bx * 1024 + i], dst)

    return main


def _run_kernel(func: Any, target: str, tmp_path: Path, *arrays: np.ndarray) -> None:
    context = create_backend_context(target)
    kernel = tl_runtime.load(build_artifact(context, func, tmp_path / target))
    kernel(*arrays)


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_fp32_to_fp16_rows_round_to_nearest_even(target: str, tmp_path: Path) -> None:
    special = np.array(
        [
            0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan,
            65504.0, 65519.0, 65520.0, -65520.0, 1e9,  # largest, below / at overflow
            2049.0, 2051.0, 2050.0, 1.0 + 2.0**-11, 1.0 + 3 * 2.0**-11,  # ties to even
            2.0**-24, 2.0**-25, 3 * 2.0**-26, 2.0**-26, 2.0**-15, 2.0**-14 - 2.0**-25,
        ],
        np.float32,
    )  # fmt: skip
    rng = np.random.default_rng(5)
    a = (rng.standard_normal(4096) * rng.choice([1e-6, 1e-3, 1, 1e3, 1e5], 4096)).astype(np.float32)
    a[: special.size] = special
    b = np.zeros(4096, np.float16)
    if target == "c":
        source = lower_to_sources(
            create_backend_context("c"), _convert_kernel(4096, "float32", "float16")
        )
        assert "tl_cvt_f32_to_f16(" in source.files["kernel.c"]
    _run_kernel(_convert_kernel(4096, "float32", "float16"), target, tmp_path, a, b)
    with np.errstate(over="ignore"):
        want = a.astype(np.float16)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(b), nan)
    np.testing.assert_array_equal(b[~nan].view(np.uint16), want[~nan].view(np.uint16))


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_fp16_to_fp32_rows_are_exact_for_every_bit_pattern(target: str, tmp_path: Path) -> None:
    a = ALL_HALF_BITS.view(np.float16).copy()
    b = np.zeros(a.size, np.float32)
    if target == "c":
        source = lower_to_sources(
            create_backend_context("c"), _convert_kernel(a.size, "float16", "float32")
        )
        assert "tl_cvt_f16_to_f32(" in source.files["kernel.c"]
    _run_kernel(_convert_kernel(a.size, "float16", "float32"), target, tmp_path, a, b)
    want = a.astype(np.float32)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(b), nan)
    np.testing.assert_array_equal(b[~nan].view(np.uint32), want[~nan].view(np.uint32))


@pytest.mark.skipif(
    os.uname().machine not in ("x86_64", "AMD64"), reason="an x86 (F16C) code check"
)
def test_transposed_widening_keeps_its_8x8_block_in_registers(tmp_path: Path) -> None:
    # The C flags turn gcc's complete unrolling off; without the block's unroll pragmas
    # its 8-element loops stay loops over stack arrays (one vcvtph2ps and one vunpcklps
    # in the function instead of 8 and 4), which cost a stream-k GEMM a third of its time.
    from tl_codegen_cpu.gcc import C_FLAGS

    source = tmp_path / "transpose.c"
    source.write_text(
        "#include <stdint.h>\n"
        + microkernel_prelude()
        + half_prelude()
        + "void widen_t(const uint16_t* s, float* d) {"
        " tl_cvt_f16_to_f32_t(s, 32, d, 128, 32, 128); }\n"
    )
    flags = [f for f in C_FLAGS if f not in ("-shared", "-march=native")]
    compiler = os.environ.get("CC") or "gcc"
    assembly = subprocess.run(
        [compiler, *flags, "-march=haswell", "-S", "-o", "-", str(source)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    body = assembly[assembly.index("widen_t:") :]
    body = body[: body.index(".cfi_endproc")]
    assert body.count("vcvtph2ps") >= 8, body
    assert body.count("vunpcklps") >= 4, body
    assert body.count("vperm2f128") >= 4, body
