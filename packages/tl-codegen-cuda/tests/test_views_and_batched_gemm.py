"""Fragment views (``T.reshape`` of a fragment) and GEMMs over batch slices of 3-D shared
tiles (``A_shared[b, :, :]``) lower for CUDA and compute what numpy does under the CPU
emulation of the generated CUDA C."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tvm.target import Target

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cuda_emulation as emu

import tl_ir.language as T
from tl_backend_api import KernelLaunch
from tl_backend_api.artifact import kernel_module
from tl_codegen_cuda.backend import BACKEND
from tl_codegen_cuda.codegen import CudaDeviceCodegen
from tl_passes.gpu import infer_fragment_layouts


def reshape_fragment(rows: int, cols: int) -> Any:
    @T.prim_func
    def main(A: T.Tensor((rows, cols), "float32"), B: T.Tensor((rows * cols,), "float32")):
        with T.Kernel(1, threads=32) as _:
            A_shared = T.alloc_shared((rows, cols), "float32")
            A_local = T.alloc_fragment((rows, cols), "float32")
            B_shared = T.alloc_shared((rows * cols,), "float32")
            T.copy(A, A_shared)
            T.copy(A_shared, A_local)
            flat = T.reshape(A_local, [rows * cols])
            for i in T.Parallel(rows * cols):
                flat[i] = flat[i] * 2.0 + i
            T.copy(flat, B_shared)
            T.copy(B_shared, B)

    return main


def reduce_after_reshape(n: int, m: int) -> Any:
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n // m,), "float32")):
        with T.Kernel(1, threads=32) as _:
            A_shared = T.alloc_shared((n,), "float32")
            A_local = T.alloc_fragment((n,), "float32")
            B_local = T.alloc_fragment((n // m,), "float32")
            T.copy(A, A_shared)
            T.copy(A_shared, A_local)
            rows = T.reshape(A_local, [n // m, m])
            T.reduce_max(rows, B_local, dim=1)
            T.copy(B_local, B)

    return main


def view_columns(n: int, m: int) -> Any:
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n // m,), "float32")):
        with T.Kernel(1, threads=32) as _:
            A_local = T.alloc_fragment((n,), "float32")
            T.copy(A, A_local)
            rows = T.reshape(A_local, [n // m, m])
            for i in T.Parallel(n // m):
                B[i] = rows[i, 0] + rows[i, m - 1]

    return main


def batched_gemm(batch: int, size: int, block: int) -> Any:
    @T.prim_func
    def main(
        A: T.Tensor((batch, size, size), "float32"),
        B: T.Tensor((batch, size, size), "float32"),
        C: T.Tensor((batch, size, size), "float32"),
    ):
        with T.Kernel(T.ceildiv(size, block), T.ceildiv(size, block), threads=64) as (bx, by):
            A_shared = T.alloc_shared((batch, block, block), "float32")
            B_shared = T.alloc_shared((batch, block, block), "float32")
            C_local = T.alloc_fragment((block, block), "float32")
            for b in T.serial(batch):
                T.clear(C_local)
                for k in T.Pipelined(T.ceildiv(size, block), num_stages=1):
                    T.copy(A[b, by * block, k * block], A_shared[b, :, :])
                    T.copy(B[b, k * block, bx * block], B_shared[b, :, :])
                    T.gemm(A_shared[b, :, :], B_shared[b, :, :], C_local)
                T.copy(C_local, C[b, by * block, bx * block])

    return main


def lower(func: Any, name: str) -> tuple[str, KernelLaunch]:
    target = Target({"kind": "cuda", "arch": "sm_80"}, host=Target("llvm"))
    mod = BACKEND.pipelines["cuda"].run(kernel_module(func, name), target)
    sources = CudaDeviceCodegen().emit_source(mod, target)
    (launch,) = sources.launches
    return sources.files[f"{name}.cu"], launch


needs_gxx = pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")


def test_a_fragment_view_shares_its_fragments_layout() -> None:
    layouts = infer_fragment_layouts(reshape_fragment(32, 32), 32)
    base, view = layouts["A_local"], layouts["flat"]
    assert (base.kind, view.kind) == ("partitioned", "partitioned")
    assert view.view_of == "A_local" and view.shape == (1024,)
    assert (view.vector, view.local_size) == (base.vector, base.local_size)
    assert "view of A_local" in view.describe()


def test_a_view_read_across_threads_makes_its_fragment_replicated() -> None:
    layouts = infer_fragment_layouts(view_columns(64, 8), 32)
    assert (layouts["A_local"].kind, layouts["rows"].kind) == ("replicated", "replicated")
    assert layouts["rows"].shape == (8, 8)


@needs_gxx
def test_replicated_view_matches_numpy_under_emulation() -> None:
    source, launch = lower(view_columns(64, 8), "view_columns")
    library = emu.compile_emulation(source, launch, emu.scratch_dir())
    a = np.random.default_rng(3).standard_normal(64).astype(np.float32)
    b = np.zeros(8, np.float32)
    emu.run_emulated(library, launch, (1,), (32,), {"A": a, "B": b})
    rows = a.reshape(8, 8)
    np.testing.assert_allclose(b, rows[:, 0] + rows[:, 7], rtol=1e-6)


@needs_gxx
def test_reshaped_fragment_matches_numpy_under_emulation() -> None:
    source, launch = lower(reshape_fragment(32, 32), "reshape_fragment")
    library = emu.compile_emulation(source, launch, emu.scratch_dir())
    a = np.random.default_rng(0).standard_normal((32, 32)).astype(np.float32)
    b = np.zeros(1024, np.float32)
    emu.run_emulated(library, launch, (1,), (32,), {"A": a, "B": b})
    np.testing.assert_allclose(b, a.reshape(-1) * 2 + np.arange(1024), rtol=1e-6)


@needs_gxx
def test_reduce_over_a_reshaped_fragment_matches_numpy_under_emulation() -> None:
    source, launch = lower(reduce_after_reshape(256, 16), "reduce_after_reshape")
    library = emu.compile_emulation(source, launch, emu.scratch_dir())
    a = np.random.default_rng(1).standard_normal(256).astype(np.float32)
    b = np.zeros(16, np.float32)
    emu.run_emulated(library, launch, (1,), (32,), {"A": a, "B": b})
    np.testing.assert_array_equal(b, a.reshape(16, 16).max(axis=1))


@needs_gxx
def test_gemm_over_batch_slices_of_shared_tiles_matches_numpy_under_emulation() -> None:
    source, launch = lower(batched_gemm(2, 32, 16), "batched_gemm")
    library = emu.compile_emulation(source, launch, emu.scratch_dir())
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 32, 32)).astype(np.float32)
    b = rng.standard_normal((2, 32, 32)).astype(np.float32)
    c = np.zeros((2, 32, 32), np.float32)
    emu.run_emulated(library, launch, (2, 2), (64,), {"A": a, "B": b, "C": c})
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
