"""CUDA lowering of TileLang constructs that failed with internal errors, checked on the
generated source, with nvcc where installed, and for the numbers under the CPU emulation
(the CPU side: integration_tests/test_porting_gaps.py):

* a 0-size dim (a K = 0 GEMM: its pipelined loop runs 0 times; the shared tiles only it
  used made TVM's shared memory merge fail) leaves C zero;
* ``T.device_assert``: the prelude's ``tl_device_assert`` (printf, then a device-side
  assert), a fault under the emulation; a target without one refuses it;
* ``T.reduce_sum``/``T.reduce_max`` over one row with a block that is not a whole number
  of warps (threads=48, 16: TVM's "Cannot insert syncs inside condition");
* ``T.Kernel(threads=n)`` without a grid, ``T.sblock`` scopes and slice values.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cuda_emulation as emu

import tl_ir.language as T
from tl_passes.gpu import PORTABLE_TRAITS, GpuLoweringError
from tl_passes.gpu.device_asserts import escaped, lower_device_asserts

NVCC = shutil.which("nvcc")
needs_gxx = pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")


def _nvcc(source: str, tmp_path: Path) -> None:
    path = tmp_path / "main.cu"
    path.write_text(source)
    done = subprocess.run(
        [str(NVCC), "-cubin", "-arch=sm_80", "-o", str(tmp_path / "main.cubin"), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def gemm_k0() -> Any:
    @T.prim_func
    def main(
        A: T.Tensor((64, 0), "float16"),
        B: T.Tensor((0, 64), "float16"),
        C: T.Tensor((64, 64), "float32"),
    ):
        with T.Kernel(1, 1, threads=128) as (_bx, _by):
            A_s = T.alloc_shared((64, 32), "float16")
            B_s = T.alloc_shared((32, 64), "float16")
            C_l = T.alloc_fragment((64, 64), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(0, 32), num_stages=2):
                T.copy(A[0, k * 32], A_s)
                T.copy(B[k * 32, 0], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[0, 0])

    return main


def asserting() -> Any:
    @T.prim_func
    def main(score: T.Tensor((64,), "float32"), out: T.Tensor((64,), "float32")):
        with T.Kernel(2, threads=32) as bx:
            for i in T.Parallel(32):
                T.device_assert(score[bx * 32 + i] < 100.0, msg='below "100"')
                out[bx * 32 + i] = score[bx * 32 + i] * 2.0

    return main


def row_reduce(width: int, threads: int, kind: str) -> Any:
    @T.prim_func
    def main(
        A: T.Tensor((1, width), "float32"),
        B: T.Tensor((1,), "float32"),
        C: T.Tensor((1, width), "float32"),
    ):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((1, width), "float32")
            dst = T.alloc_fragment((1,), "float32")
            T.copy(A, src)
            if kind == "sum":
                T.reduce_sum(src, dst, dim=1)
            else:
                T.reduce_max(src, dst, dim=1)
            T.copy(dst, B)
            for i, j in T.Parallel(1, width):  # every thread reads the replicated result
                C[i, j] = src[i, j] - dst[i]

    return main


def scoped_and_sliced() -> Any:
    @T.prim_func
    def main(A: T.Tensor((60, 60), "int32"), Out: T.Tensor((64, 64), "int32")):
        with T.Kernel(threads=128):
            tile = T.alloc_shared((64, 64), "int32")
            with T.sblock("outer"):
                T.reads()
                T.writes()
                T.annotate_safe_value({A: -1})
                with T.sblock("inner"):
                    T.annotate_safe_value({A: -99})
                T.copy(A[0:64, 0:64], tile)
            for i, j in T.Parallel(64, 64):
                Out[i, j] = tile[i, j]
            T.sync_threads()
            row = Out[0, 0:4]
            Out[63, 60:64] = row

    return main


@needs_gxx
def test_zero_size_dim_gemm_leaves_c_zero() -> None:
    arrays = {
        "A": np.zeros((64, 0), np.float16),
        "B": np.zeros((0, 64), np.float16),
        "C": np.ones((64, 64), np.float32),
    }
    sources = emu.emulate(gemm_k0(), arrays)
    assert not arrays["C"].any()
    assert sources.launches[0].dynamic_shared_memory_bytes == 0  # the unused tiles are gone


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed here")
def test_zero_size_dim_gemm_compiles_with_nvcc(tmp_path: Path) -> None:
    _nvcc(emu.lower_for_cuda(gemm_k0()).files["main.cu"], tmp_path)


@needs_gxx
def test_device_assert_passes_and_faults_under_the_emulation() -> None:
    arrays = {"score": np.arange(64, dtype=np.float32), "out": np.zeros(64, np.float32)}
    sources = emu.emulate(asserting(), arrays)
    np.testing.assert_array_equal(arrays["out"], np.arange(64, dtype=np.float32) * 2)
    source = sources.files["main.cu"]
    assert "__device__ __noinline__ void tl_device_assert(bool cond" in source
    assert "tl_device_assert((" in source and "T.device_assert failed in kernel 'main'" in source
    arrays["score"][40] = 1000.0
    with pytest.raises(RuntimeError, match=r'device assert: .*below "100" at .*block \(1, 0, 0\)'):
        emu.emulate(asserting(), arrays, sources=sources)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed here")
def test_device_assert_compiles_with_nvcc(tmp_path: Path) -> None:
    _nvcc(emu.lower_for_cuda(asserting()).files["main.cu"], tmp_path)


def test_source_without_device_assert_has_no_helper() -> None:
    assert "tl_device_assert" not in emu.lower_for_cuda(gemm_k0()).files["main.cu"]


def test_target_without_device_assert_refuses_it() -> None:
    func = asserting()
    with pytest.raises(GpuLoweringError, match=r"T.device_assert is not supported on target 'gpu'"):
        lower_device_asserts(func.body, PORTABLE_TRAITS)


def test_message_is_escaped_for_a_c_string() -> None:
    assert escaped('a "b" \\ c\nd\te') == 'a \\"b\\" \\\\ c\\nd e'


@needs_gxx
@pytest.mark.parametrize(
    ("width", "threads", "kind"),
    [(48, 48, "sum"), (16, 16, "max"), (96, 48, "max"), (48, 24, "sum"), (48, 128, "sum")],
)
def test_row_reduce_with_a_partial_warp_block(width: int, threads: int, kind: str) -> None:
    a = np.random.default_rng(width + threads).standard_normal((1, width)).astype(np.float32)
    arrays = {"A": a, "B": np.zeros(1, np.float32), "C": np.zeros((1, width), np.float32)}
    emu.emulate(row_reduce(width, threads, kind), arrays)
    expected = a.sum() if kind == "sum" else a.max()
    np.testing.assert_allclose(arrays["B"][0], expected, rtol=1e-5)
    np.testing.assert_allclose(arrays["C"], a - expected, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed here")
def test_row_reduce_with_48_threads_compiles_with_nvcc(tmp_path: Path) -> None:
    _nvcc(emu.lower_for_cuda(row_reduce(48, 48, "sum")).files["main.cu"], tmp_path)


@needs_gxx
def test_kernel_without_grid_sblock_and_slice_values() -> None:
    a = np.arange(3600, dtype=np.int32).reshape(60, 60)
    arrays = {"A": a, "Out": np.zeros((64, 64), np.int32)}
    sources = emu.emulate(scoped_and_sliced(), arrays)
    assert sources.launches[0].grid == (1,)
    out = arrays["Out"]
    np.testing.assert_array_equal(out[:60, :60], a)
    assert set(out[60:63].ravel()) == {-1}  # the inner scope's -99 ended with it
    np.testing.assert_array_equal(out[63, 60:64], a[0, 0:4])


def gemm_clear_at_first_step() -> Any:
    """TileLang's ``T.gemm(..., clear_accum=k == 0)``: C starts from garbage, which the
    run-time clear at the first K step wipes."""

    @T.prim_func
    def main(
        A: T.Tensor((32, 64), "float16"),
        B: T.Tensor((32, 64), "float16"),
        C: T.Tensor((32, 32), "float32"),
    ):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((32, 16), "float16")
            B_s = T.alloc_shared((32, 16), "float16")
            C_l = T.alloc_fragment((32, 32), "float32")
            T.fill(C_l, 1000.0)
            for k in T.Pipelined(4, num_stages=1):
                T.copy(A[0, k * 16], A_s)
                T.copy(B[0, k * 16], B_s)
                T.gemm(A_s, B_s, C_l, transpose_B=True, clear_accum=k == 0)
            T.copy(C_l, C)

    return main


@needs_gxx
def test_a_run_time_clear_accum_clears_at_its_step() -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((32, 64)).astype(np.float16)
    b = rng.standard_normal((32, 64)).astype(np.float16)
    arrays = {"A": a, "B": b, "C": np.zeros((32, 32), np.float32)}
    emu.emulate(gemm_clear_at_first_step(), arrays)
    expected = a.astype(np.float32) @ b.astype(np.float32).T
    np.testing.assert_allclose(arrays["C"], expected, rtol=1e-3, atol=1e-3)
