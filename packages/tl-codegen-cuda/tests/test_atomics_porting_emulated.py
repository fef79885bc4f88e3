"""TileLang's atomic surface on CUDA: a scalar onto a tile, ``T.atomic_load`` /
``T.atomic_store``, unsigned and 64-bit integer atomics, 16-bit float max/min and
``T.atomic_or``. The generated CUDA runs under the CPU emulation against numpy (the
kernels of integration_tests/atomic_porting_kernels.py, which c and llvm run too) and
nvcc compiles it; a dtype the CUDA atomics lack is refused naming op, dtype and choices."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

import cuda_emulation as emu

import tl_ir.language as T
from integration_tests.atomic_porting_kernels import CASES, load_store_flag
from tl_passes.gpu import GpuLoweringError

NVCC = shutil.which("nvcc")
needs_gxx = pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")


@needs_gxx
@pytest.mark.parametrize("name", sorted(CASES))
def test_emulated_atomic_kernels_compute_what_numpy_does(name: str) -> None:
    build, make_arrays, expected = CASES[name]
    arrays = make_arrays()
    wanted = expected({k: v.copy() for k, v in arrays.items()})
    emu.emulate(build(), arrays)
    for output, want in wanted.items():
        np.testing.assert_array_equal(arrays[output], want, err_msg=f"{name}: {output}")


@needs_gxx
def test_emulated_blocks_see_their_own_add_through_an_atomic_load() -> None:
    arrays = {
        "Count": np.zeros(1, np.int64),
        "Seen": np.zeros(8, np.int64),
        "Flag": np.zeros(8, np.int32),
    }
    emu.emulate(load_store_flag(), arrays)
    assert arrays["Count"][0] == 8 and ((arrays["Seen"] >= 1) & (arrays["Seen"] <= 8)).all()
    np.testing.assert_array_equal(arrays["Flag"], np.arange(1, 9, dtype=np.int32))


def test_load_store_and_or_are_the_prelude_helpers() -> None:
    load_store = emu.lower_for_cuda(CASES["load_store"][0]()).files["main.cu"]
    kernel = load_store.split('extern "C" __global__')[-1]
    assert "tl_atomic_load(" in kernel and "tl_atomic_store(" in kernel
    or_bits = emu.lower_for_cuda(CASES["or_bits"][0]()).files["main.cu"]
    assert "tl_atomic_or(" in or_bits.split('extern "C" __global__')[-1]


def _max_min_16(dtype: str) -> Any:
    @T.prim_func
    def main(A: T.Tensor((64,), dtype), Out: T.Tensor((4,), dtype), P: T.Tensor((64,), dtype)):
        with T.Kernel(2, threads=32) as bx:
            for i in T.Parallel(32):
                T.atomic_max(Out[1], A[bx * 32 + i])
                T.atomic_min(Out[2], A[bx * 32 + i])
            P[bx * 32 + T.get_thread_binding()] = T.atomic_max(
                Out[3], A[bx * 32 + T.get_thread_binding()], return_prev=True
            )

    return main


@needs_gxx
def test_emulated_float16_max_min_update_the_right_half_of_the_word() -> None:
    # Out[1] and Out[2] share one 32-bit word: the CAS must leave the neighbour alone.
    a = (np.random.default_rng(7).permutation(64) - 20).astype(np.float16)
    out = np.array([5, -100, 100, -100], np.float16)
    p = np.zeros(64, np.float16)
    arrays = {"A": a, "Out": out, "P": p}
    emu.emulate(_max_min_16("float16"), arrays)
    np.testing.assert_array_equal(
        arrays["Out"], np.array([5, a.max(), a.min(), a.max()], np.float16)
    )
    assert (arrays["P"] <= a.max()).all() and (arrays["P"] == -100).sum() == 1


def _nvcc(source: str, tmp_path: Path) -> None:
    path = tmp_path / "main.cu"
    path.write_text(source)
    done = subprocess.run(
        [str(NVCC), "-cubin", "-arch=sm_80", "-o", str(tmp_path / "main.cubin"), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed here")
@pytest.mark.parametrize("name", sorted(CASES))
def test_nvcc_compiles_the_atomic_kernels(name: str, tmp_path: Path) -> None:
    _nvcc(emu.lower_for_cuda(CASES[name][0]()).files["main.cu"], tmp_path)


def _every_kind(dtype: str) -> Any:
    @T.prim_func
    def main(A: T.Tensor((32,), dtype), Out: T.Tensor((4,), dtype), P: T.Tensor((32,), dtype)):
        with T.Kernel(1, threads=32) as _:
            for i in T.Parallel(32):
                T.atomic_add(Out[0], A[i])
                T.atomic_max(Out[1], A[i])
                P[i] = T.atomic_min(Out[2], A[i], return_prev=True)
                T.atomic_store(Out[3], T.atomic_load(A[i]))

    return main


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed here")
@pytest.mark.parametrize("dtype", ["int64", "uint64", "uint32", "float16", "bfloat16"])
def test_nvcc_compiles_every_kind_on_each_dtype(dtype: str, tmp_path: Path) -> None:
    # int64/uint64 atomicAdd, uint32/64-bit/16-bit max and min did not compile before.
    _nvcc(emu.lower_for_cuda(_every_kind(dtype)).files["main.cu"], tmp_path)


def test_a_dtype_the_cuda_atomics_lack_names_op_dtype_and_choices() -> None:
    @T.prim_func
    def main(A: T.Tensor((1,), "int8")):
        with T.Kernel(1, threads=32) as _:
            T.atomic_add(A[0], T.int8(1))

    with pytest.raises(
        GpuLoweringError,
        match=r"T.atomic_add on A: dtype int8 is not supported on target 'cuda'; expected one of \['bfloat16'",
    ):
        emu.lower_for_cuda(main)
