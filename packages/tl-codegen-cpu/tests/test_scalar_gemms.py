"""The GEMM paths of real TileLang programs: `cpu-lower-scalar-gemms` (scalar GEMM loop nests
on the micro-kernel, bit-identical), the fp16-product micro-kernel of the C path, native fp16
arithmetic on ``llvm``, transposed operands packed in register blocks (C routines on ``c``,
TIR shuffles on ``llvm``) and half operand views widened by row calls."""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tvm
import tvm_ffi
from cpu_passes_testing import HOST_TARGET, make_pass, run_on_host

import tl_ir.language as T
import tl_runtime
from tl_backend_api import build_artifact, create_backend_context, lower_to_sources
from tl_codegen_cpu.c_headers import half_prelude, microkernel_prelude
from tl_codegen_cpu.lowering.tile_transpose import emit_block_transpose
from tl_codegen_cpu.lowering.vector_isa import vector_isa_for_target
from tl_codegen_cpu.passes.interchange_reductions import CpuInterchangeReductionsPass
from tl_codegen_cpu.passes.legalize_half_precision import legalize_half_precision
from tl_codegen_cpu.passes.scalar_gemms import CpuLowerScalarGemmsPass
from tl_passes import Pipeline


def grid_gemm(
    M: int,
    N: int,
    K: int,
    block: int,
    dtype: str,
    *,
    trans_a: bool = False,
    trans_b: bool = False,
    halve_index: bool = False,
) -> Any:
    """TileLang's CPU test GEMM, ``for i, j, k in T.grid: C[i, j] += A[i, k] * B[k, j]``,
    with A / B stored transposed on request (``halve_index``: ``C[i, j // 2]``, two j per
    element, which is no GEMM)."""
    a_shape = (K, M) if trans_a else (M, K)
    b_shape = (N, K) if trans_b else (K, N)
    a_tile = (block, block)

    @T.prim_func
    def main(
        A: T.Tensor(a_shape, dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((M, N), "float32")
    ):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block)) as (bx, by):
            A_local = T.alloc_local(a_tile, dtype)
            B_local = T.alloc_local(a_tile, dtype)
            C_local = T.alloc_local((block, block), "float32")
            T.clear(C_local)
            for ko in T.serial(K // block):
                if trans_a:
                    T.copy(A[ko * block, by * block], A_local)
                else:
                    T.copy(A[by * block, ko * block], A_local)
                if trans_b:
                    T.copy(B[bx * block, ko * block], B_local)
                else:
                    T.copy(B[ko * block, bx * block], B_local)
                for i, j, k in T.grid(block, block, block):
                    if halve_index:
                        C_local[i, j // 2] += A_local[i, k] * B_local[k, j]
                    elif trans_a and trans_b:
                        C_local[i, j] += A_local[k, i] * B_local[j, k]
                    elif trans_a:
                        C_local[i, j] += A_local[k, i] * B_local[k, j]
                    elif trans_b:
                        C_local[i, j] += B_local[j, k] * A_local[i, k]
                    else:
                        C_local[i, j] += A_local[i, k] * B_local[k, j]
            T.copy(C_local, C[by * block, bx * block])

    return main


def _recognized(func: Any) -> str:
    passes = (*(make_pass(n) for n in ("cpu-lower-launch", "cpu-forward-copies")),)
    passes += (CpuLowerScalarGemmsPass(gemm_style="c-vector-extension"),)
    return Pipeline("test", passes).run(tvm.IRModule({"main": func})).script()


def test_an_fp16_grid_gemm_calls_the_rounded_product_microkernel() -> None:
    text = _recognized(grid_gemm(64, 64, 64, 32, "float16"))
    assert "tl_gemm_f16r_f32x" in text
    assert "T.grid(32, 32, 32)" not in text


def test_an_fp32_grid_gemm_calls_the_fp32_microkernel() -> None:
    text = _recognized(grid_gemm(64, 64, 64, 32, "float32", trans_a=True))
    assert '"tl_gemm_f32x' in text


def test_a_store_that_merges_iterations_is_left_alone() -> None:
    func = grid_gemm(64, 64, 64, 32, "float16", halve_index=True)
    passes = tuple(make_pass(n) for n in ("cpu-lower-launch", "cpu-forward-copies"))
    plain = Pipeline("test", passes).run(tvm.IRModule({"main": func}))
    lowered = Pipeline("test", (*passes, CpuLowerScalarGemmsPass())).run(
        tvm.IRModule({"main": func})
    )
    assert tvm_ffi.structural_equal(plain, lowered)


def _fp16_products_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # Each product rounded to fp16 (numpy's fp16 multiply), added in fp32 in order of k.
    want = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k in range(a.shape[1]):
        want += (a[:, k : k + 1] * b[k : k + 1, :]).astype(np.float32)
    return want


@pytest.mark.parametrize("target", ["c", "llvm"])
@pytest.mark.parametrize(("trans_a", "trans_b"), [(False, False), (True, False), (False, True)])
def test_fp16_grid_gemm_is_bit_identical_to_the_program(
    target: str, trans_a: bool, trans_b: bool, tmp_path: Path
) -> None:
    M, N, K = 64, 96, 64
    rng = np.random.default_rng(11)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    a[0, :8] = 2.0**-12  # products in fp16's subnormal range
    b[0, :3] = [np.inf, 300.0, -300.0]  # inf and products that overflow fp16
    func = grid_gemm(M, N, K, 32, "float16", trans_a=trans_a, trans_b=trans_b)
    if target == "c":
        source = lower_to_sources(create_backend_context("c"), func).files["kernel.c"]
        assert "tl_gemm_f16r_f32x" in source
    c = np.zeros((M, N), np.float32)
    kernel = tl_runtime.load(
        build_artifact(create_backend_context(target), func, tmp_path / target)
    )
    kernel(
        np.ascontiguousarray(a.T) if trans_a else a, np.ascontiguousarray(b.T) if trans_b else b, c
    )
    with np.errstate(invalid="ignore", over="ignore"):
        want = _fp16_products_reference(a, b)
    np.testing.assert_array_equal(np.isnan(c), np.isnan(want))
    finite = ~np.isnan(want)
    np.testing.assert_array_equal(c[finite].view(np.uint32), want[finite].view(np.uint32))


_PROBE = r"""
/* One k step per call, C starting at -0.0 (x + -0.0 == x): C holds the products. */
void f16r4(const void* a, const void* b, float* c) { tl_gemm_f16r_f32x4(8, 2, 1, a, 1, 1, b, 8, c, 8); }
void f16r8(const void* a, const void* b, float* c) { tl_gemm_f16r_f32x8(8, 1, 1, a, 1, 1, b, 8, c, 8); }
void f16r16(const void* a, const void* b, float* c) { tl_gemm_f16r_f32x16(8, 1, 1, a, 1, 1, b, 16, c, 16); }
"""

#: -march=native takes AVX-512-FP16's vmulph where the CPU has it; haswell: F16C's
#: conversions; x86-64: gcc's scalar _Float16 rounding.
_ISAS = {"native": "-march=native", "f16c": "-march=haswell", "baseline": "-march=x86-64"}


@pytest.mark.parametrize("isa", list(_ISAS))
@pytest.mark.parametrize("lanes", [4, 8, 16])
def test_rounded_products_match_fp16_multiplication_for_every_a(
    lanes: int, isa: str, tmp_path: Path
) -> None:
    source = tmp_path / "probe.c"
    source.write_text("#include <stdint.h>\n" + microkernel_prelude() + half_prelude() + _PROBE)
    library = tmp_path / "probe.so"
    compiler = os.environ.get("CC") or "gcc"
    flags = [_ISAS[isa], "-shared", "-fPIC", "-Wno-psabi"]
    subprocess.run(
        [compiler, "-O2", *flags, str(source), "-o", str(library)], check=True, capture_output=True
    )
    probe = getattr(ctypes.CDLL(str(library)), f"f16r{lanes}")
    # Every fp16 bit pattern as A (8 rows per call) against 16 B values chosen to give
    # normal, subnormal, overflowing, inf and NaN products.
    a_all = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    b = np.array(
        [
            1.5,
            -3.0,
            2.0**-14,
            -(2.0**-10),
            1000.0,
            65504.0,
            np.inf,
            np.nan,
            0.0,
            -0.0,
            0.1,
            7.0,
            2.0**-24,
            3.140625,
            -1.0009765625,
            255.9,
        ],
        np.float16,
    )
    width = 8 if lanes == 4 else lanes
    b_row = np.ascontiguousarray(b[:width])
    got = np.full((a_all.size, width), -0.0, np.float32)
    for start in range(0, a_all.size, 8):
        rows = np.ascontiguousarray(a_all[start : start + 8])
        probe(
            rows.ctypes.data_as(ctypes.c_void_p),
            b_row.ctypes.data_as(ctypes.c_void_p),
            got[start : start + 8].ctypes.data_as(ctypes.c_void_p),
        )
    with np.errstate(all="ignore"):
        want = (a_all[:, None] * b_row[None, :]).astype(np.float32)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))


def test_native_fp16_arithmetic_is_left_alone_only_where_asked() -> None:
    x = tvm.tirx.Var("x", "float16")
    stmt = tvm.tirx.Evaluate(x * x + x)
    widened = legalize_half_precision(stmt, ("float16",)).script()
    kept = legalize_half_precision(stmt, ("float16",), native=("float16",)).script()
    assert 'T.Cast("float32", x)' in widened
    assert "T.Cast" not in kept


@pytest.mark.skipif(
    not vector_isa_for_target(None).native_fp16, reason="the host has no AVX-512-FP16"
)
def test_llvm_multiplies_fp16_products_natively(tmp_path: Path) -> None:
    func = grid_gemm(64, 64, 64, 32, "float16")
    context = create_backend_context("llvm")
    text = lower_to_sources(context, func).files["kernel.ll"]
    assert "fmul <16 x half>" in text or "fmul <32 x half>" in text


_TRANSPOSE_PROBE = r"""
void widen_t(const void* s, int ss, float* d, int ds, int rows, int cols) {
  tl_cvt_f16_to_f32_t(s, ss, d, ds, rows, cols);
}
void copy_t(const void* s, int ss, float* d, int ds, int rows, int cols) {
  tl_transpose_f32(s, ss, d, ds, rows, cols);
}
"""


@pytest.mark.parametrize("isa", ["native", "baseline"])
@pytest.mark.parametrize("function", ["widen_t", "copy_t"])
def test_transposed_widening_is_exact_for_any_shape(
    function: str, isa: str, tmp_path: Path
) -> None:
    # 8 x 8 register blocks with F16C (native), element by element without (baseline);
    # shapes with leftover rows and columns, padded source and destination pitches.
    source = tmp_path / "probe.c"
    source.write_text(
        "#include <stdint.h>\n" + microkernel_prelude() + half_prelude() + _TRANSPOSE_PROBE
    )
    library = tmp_path / "probe.so"
    compiler = os.environ.get("CC") or "gcc"
    flags = [_ISAS[isa], "-shared", "-fPIC", "-Wno-psabi"]
    subprocess.run(
        [compiler, "-O2", *flags, str(source), "-o", str(library)], check=True, capture_output=True
    )
    transpose = getattr(ctypes.CDLL(str(library)), function)
    dtype, bits = (np.float16, np.uint16) if function == "widen_t" else (np.float32, np.uint32)
    rng = np.random.default_rng(2)
    for rows, cols in [(64, 64), (13, 21), (8, 8), (16, 9), (7, 30), (1, 1)]:
        src = rng.integers(0, np.iinfo(bits).max, (cols + 3, rows + 5), dtype=bits).view(dtype)
        dst = np.full((rows, cols + 2), 7.0, np.float32)
        as_ptr = ctypes.c_void_p
        transpose(
            src.ctypes.data_as(as_ptr), src.shape[1], dst.ctypes.data_as(as_ptr),
            dst.shape[1], rows, cols,
        )  # fmt: skip
        want = src[:cols, :rows].T.astype(np.float32)
        got = dst[:, :cols]
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        finite = ~np.isnan(want)
        np.testing.assert_array_equal(got[finite].view(np.uint32), want[finite].view(np.uint32))
        assert np.all(dst[:, cols:] == 7.0)  # nothing written past the tile


def test_transposed_half_gemm_operands_widen_in_register_blocks_on_c() -> None:
    @T.prim_func
    def main(
        A: T.Tensor((64, 64), "float16"),
        B: T.Tensor((64, 64), "float16"),
        C: T.Tensor((64, 64), "float32"),
    ):
        with T.Kernel(2, 2) as (bx, by):
            A_shared = T.alloc_shared((32, 32), "float16")
            B_shared = T.alloc_shared((32, 32), "float16")
            C_local = T.alloc_fragment((32, 32), "float32")
            T.clear(C_local)
            for ko in T.serial(2):
                T.copy(A[ko * 32, by * 32], A_shared)
                T.copy(B[bx * 32, ko * 32], B_shared)
                T.gemm(A_shared, B_shared, C_local, True, True)
            T.copy(C_local, C[by * 32, bx * 32])

    source = lower_to_sources(create_backend_context("c"), main).files["kernel.c"]
    assert source.count("tl_cvt_f16_to_f32_t(") == 2  # A and B (the definition is a macro)


def test_a_transposed_fp32_b_tile_is_packed_in_register_blocks_on_c(tmp_path: Path) -> None:
    M = N = K = 64
    func = grid_gemm(M, N, K, 32, "float32", trans_a=True, trans_b=True)
    # (a scalar GEMM: the same micro-kernel T.gemm gets, B packed before it)
    source = lower_to_sources(create_backend_context("c"), func).files["kernel.c"]
    assert "tl_transpose_f32(" in source
    rng = np.random.default_rng(4)
    a = rng.standard_normal((K, M)).astype(np.float32)
    b = rng.standard_normal((N, K)).astype(np.float32)
    c = np.zeros((M, N), np.float32)
    kernel = tl_runtime.load(build_artifact(create_backend_context("c"), func, tmp_path / "c"))
    kernel(a, b, c)
    np.testing.assert_allclose(c, a.T @ b.T, rtol=1e-5, atol=1e-4)


def test_half_operand_views_at_an_offset_widen_through_row_calls_on_c(tmp_path: Path) -> None:
    # A T.gemm operand that is a column slice of a wider fp16 tile (TileLang's
    # gemm_with_stride): its widening rows start at `chunk * 16 + 32`, still one call each.
    @T.prim_func
    def main(
        A: T.Tensor((64, 64), "float16"),
        B: T.Tensor((64, 64), "float16"),
        C: T.Tensor((64, 64), "float32"),
    ):
        with T.Kernel(2, 2) as (bx, by):
            A_shared = T.alloc_shared((32, 64), "float16")
            B_shared = T.alloc_shared((32, 32), "float16")
            C_local = T.alloc_fragment((32, 32), "float32")
            T.clear(C_local)
            T.clear(A_shared)
            for ko in T.serial(2):
                for i, k in T.Parallel(32, 32):
                    A_shared[i, k + 32] = A[by * 32 + i, ko * 32 + k]
                T.copy(B[ko * 32, bx * 32], B_shared)
                T.gemm(A_shared[:, 32:], B_shared, C_local)
            T.copy(C_local, C[by * 32, bx * 32])

    source = lower_to_sources(create_backend_context("c"), main).files["kernel.c"]
    widening = [line for line in source.splitlines() if "gemm_a_fp32" in line]
    assert any("tl_cvt_f16_to_f32(" in line for line in widening)
    assert not any("(float)" in line for line in widening)
    rng = np.random.default_rng(6)
    a = rng.integers(-4, 5, (64, 64)).astype(np.float16)
    b = rng.integers(-4, 5, (64, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    kernel = tl_runtime.load(build_artifact(create_backend_context("c"), main, tmp_path / "c"))
    kernel(a, b, c)
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_block_transpose_packs_a_transposed_tile_exactly(dtype: str) -> None:
    # The [24, 16] tile at offset (3, 5) of a [32, 32] buffer, transposed into [16, 24].
    source = tvm.tirx.decl_buffer((32, 32), dtype, name="S")
    packed = tvm.tirx.decl_buffer((16, 24), "float32", name="P")
    body = emit_block_transpose(source, [3, 5], packed, 16, 24)
    assert "T.Shuffle" in tvm.tirx.PrimFunc([source, packed], body).script()
    func = tvm.tirx.PrimFunc([source, packed], body).with_attrs(
        {"global_symbol": "main", "tir.noalias": True}
    )
    rng = np.random.default_rng(8)
    bits = rng.integers(0, 1 << 16, (32, 32), dtype=np.uint16).view(np.float16)
    s = bits if dtype == "float16" else rng.standard_normal((32, 32)).astype(np.float32)
    got = run_on_host(func, s, np.zeros((16, 24), np.float32))[1]
    want = s[3:27, 5:21].T.astype(np.float32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = ~np.isnan(want)
    np.testing.assert_array_equal(got[finite].view(np.uint32), want[finite].view(np.uint32))
    with pytest.raises(ValueError, match="multiples of 8"):
        emit_block_transpose(source, [0, 0], packed, 12, 24)


def test_transposed_operands_are_packed_by_shuffles_on_llvm() -> None:
    func = grid_gemm(64, 64, 64, 32, "float32", trans_b=True)
    passes = [make_pass(n) for n in ("cpu-lower-launch", "cpu-forward-copies")]
    passes.append(CpuLowerScalarGemmsPass(gemm_style="tir"))
    text = Pipeline("test", tuple(passes)).run(tvm.IRModule({"main": func})).script()
    assert "T.Shuffle" in text


@pytest.mark.parametrize(("dtype", "style", "lowered"), [
    ("bfloat16", "c-vector-extension", False),  # bf16 products: no C kernel, loops stay
    ("bfloat16", "tir", True),
    ("int8", "c-vector-extension", False),  # int8 products into an fp32 C: no GEMM kernel
])  # fmt: skip
def test_gemms_the_c_kernels_do_not_cover_stay_loops_on_c(
    dtype: str, style: str, lowered: bool
) -> None:
    func = grid_gemm(64, 64, 64, 32, dtype)
    passes = tuple(make_pass(n) for n in ("cpu-lower-launch", "cpu-forward-copies"))
    plain = Pipeline("test", passes).run(tvm.IRModule({"main": func}))
    after = Pipeline("test", (*passes, CpuLowerScalarGemmsPass(gemm_style=style))).run(
        tvm.IRModule({"main": func})
    )
    assert tvm_ffi.structural_equal(plain, after) != lowered


def test_bf16_grid_gemm_on_llvm_matches_the_loops_bit_for_bit() -> None:
    import ml_dtypes

    M = N = K = 64
    rng = np.random.default_rng(12)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((K, N)).astype(ml_dtypes.bfloat16)
    after = ("cpu-lower-tile-ops", "cpu-lower-parallel-loops", "cpu-localize-tiles")
    after += ("cpu-legalize-half-precision", "simplify")
    results = []
    for middle in (CpuInterchangeReductionsPass(), CpuLowerScalarGemmsPass(gemm_style="tir")):
        passes = [make_pass(n) for n in ("cpu-lower-launch", "cpu-forward-copies")]
        passes += [middle, *(make_pass(n) for n in after)]
        mod = Pipeline("test", tuple(passes)).run(
            tvm.IRModule({"main": grid_gemm(M, N, K, 32, "bfloat16")}), HOST_TARGET
        )
        lib = tvm.compile(mod["main"].with_attr("global_symbol", "main"), target=HOST_TARGET)
        tensors = []
        for x in (a, b):
            tensor = tvm.runtime.empty(x.shape, "bfloat16")
            tensor.copyfrom(x.view(np.uint16))
            tensors.append(tensor)
        c = tvm.runtime.tensor(np.zeros((M, N), np.float32))
        lib["main"](*tensors, c)
        results.append(c.numpy())
    np.testing.assert_array_equal(results[0], results[1])


def test_a_transposed_pack_without_a_vector_kernel_call_still_links_on_c(tmp_path: Path) -> None:
    # 12-wide tiles, not a multiple of the 8 (AVX2) or 16 (AVX-512) fp32 lanes: no
    # tl_gemm_f32x* call (TIR loops), only the tl_transpose_f32 pack, whose definition
    # must still be inserted.
    M = N = K = 24
    func = grid_gemm(M, N, K, 12, "float32", trans_b=True)
    source = lower_to_sources(create_backend_context("c"), func).files["kernel.c"]
    assert "tl_transpose_f32(" in source
    assert not re.search(r"tl_gemm_f32x\d+\(", source)
    rng = np.random.default_rng(9)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((N, K)).astype(np.float32)
    c = np.zeros((M, N), np.float32)
    kernel = tl_runtime.load(build_artifact(create_backend_context("c"), func, tmp_path / "c"))
    kernel(a, b, c)
    np.testing.assert_allclose(c, a @ b.T, rtol=1e-5, atol=1e-5)
