"""Run-time tile extents with a compile-time bound on CUDA without a GPU: the kernels of
integration_tests/run_time_tile_kernels.py (copies with run-time extents on both sides,
fills of a run-time region of a shared tile and of a fragment, scans of a run-time
region through a scratch tile) lower to CUDA C that nvcc
compiles and that computes, under the CPU emulation, what numpy (and the c and llvm
targets) compute."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

import cuda_emulation as emu

from integration_tests.run_time_tile_kernels import CASES, LENGTHS, inputs, outputs_before

NVCC = shutil.which("nvcc")
needs_gxx = pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed here")
@pytest.mark.parametrize("name", sorted(CASES))
def test_compiles_with_nvcc(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.cu"
    path.write_text(emu.lower_for_cuda(CASES[name][0]()).files["main.cu"])
    done = subprocess.run(
        [str(NVCC), "-cubin", "-arch=sm_80", "-o", str(tmp_path / f"{name}.cubin"), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]


@needs_gxx
@pytest.mark.parametrize("name", sorted(CASES))
def test_computes_what_numpy_does_under_emulation(name: str) -> None:
    build, outputs, expected = CASES[name]
    func = build()
    sources = emu.lower_for_cuda(func)
    a = inputs()
    for length in LENGTHS:
        results = outputs_before(len(outputs))
        wanted = expected(a, length, *[r.copy() for r in results])
        arrays = {
            "A": a,
            "L": np.array([length], np.int32),
            **dict(zip(outputs, results, strict=True)),
        }
        emu.emulate(func, arrays, sources=sources)
        for output, want in zip(outputs, wanted, strict=True):
            np.testing.assert_array_equal(
                arrays[output], want, err_msg=f"{name} {output} L={length}"
            )


def test_a_reduction_over_a_run_time_region_is_refused_saying_what_to_write() -> None:
    from integration_tests.test_run_time_tiles import reduce_of_a_run_time_region
    from tl_passes.gpu.errors import GpuLoweringError

    with pytest.raises(GpuLoweringError, match=r"no compile-time upper bound.*whole tile"):
        emu.lower_for_cuda(reduce_of_a_run_time_region())
