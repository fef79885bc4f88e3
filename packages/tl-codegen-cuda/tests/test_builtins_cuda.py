"""TileLang builtins on CUDA without a GPU: random numbers (the Philox stream written in
the IR), the legacy reducer and T.im2col (TileLang's convolution) lower to CUDA C that nvcc compiles and that computes, under
the CPU emulation, what the c and llvm targets and the numpy references compute."""

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

from integration_tests.builtin_kernels import (
    convolution,
    expected_rand_1d,
    gemv_alloc_reducer,
    im2col_tiles,
    numpy_im2col,
    philox_blocks,
    tilelang_rand_1d,
)
from integration_tests.philox_reference import KNOWN_ANSWERS

NVCC = shutil.which("nvcc")
needs_gxx = pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")

CASES = {
    "philox_blocks": philox_blocks,
    "rand_1d": lambda: tilelang_rand_1d(256, 42),
    "gemv_reducer": lambda: gemv_alloc_reducer(64, 96),
    "convolution": lambda: convolution(2, 16, 8, 8, 32, 3, 1, 1, 1, 32, 32, 16, 2, 128),
}


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed here")
@pytest.mark.parametrize("name", sorted(CASES))
def test_compiles_with_nvcc(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.cu"
    path.write_text(emu.lower_for_cuda(CASES[name]()).files["main.cu"])
    done = subprocess.run(
        [str(NVCC), "-cubin", "-arch=sm_80", "-o", str(tmp_path / f"{name}.cubin"), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]


@needs_gxx
def test_the_philox_block_gives_the_known_answers_under_emulation() -> None:
    out = np.zeros((3, 4), np.uint32)
    emu.emulate(
        philox_blocks(),
        {
            "C": np.array([c for c, _, _ in KNOWN_ANSWERS], np.uint32),
            "K": np.array([k for _, k, _ in KNOWN_ANSWERS], np.uint32),
            "Out": out,
        },
    )
    np.testing.assert_array_equal(out, np.array([o for _, _, o in KNOWN_ANSWERS], np.uint32))


@needs_gxx
def test_tilelangs_random_example_draws_the_same_stream_under_emulation() -> None:
    arrays = {
        "A": np.zeros(256, np.uint32),
        "B": np.zeros(256, np.float32),
        "D": np.zeros(256, np.float32),
        "E": np.zeros(256, np.float64),
    }
    emu.emulate(tilelang_rand_1d(256, 42), arrays)
    expected = expected_rand_1d(256, 42)
    np.testing.assert_array_equal(arrays["A"], expected["A"])
    np.testing.assert_array_equal(arrays["B"], expected["B"])
    np.testing.assert_allclose(arrays["D"], expected["D"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(arrays["E"], expected["E"], rtol=1e-12, atol=1e-12)


@needs_gxx
def test_the_legacy_reducer_gemv_matches_numpy_under_emulation() -> None:
    rng = np.random.default_rng(7)
    a = rng.standard_normal((64, 96)).astype(np.float16)
    x = rng.standard_normal(96).astype(np.float16)
    o = np.zeros(64, np.float16)
    emu.emulate(gemv_alloc_reducer(64, 96), {"a": a, "x": x, "o": o})
    expected = a.astype(np.float32) @ x.astype(np.float32)
    np.testing.assert_allclose(o.astype(np.float32), expected, rtol=1e-2, atol=1e-2)


@needs_gxx
def test_im2col_tiles_are_numpys_under_emulation() -> None:
    N, H, W, C, K, S, D, P = 2, 7, 6, 3, 3, 2, 2, 2
    data = np.random.default_rng(3).standard_normal((N, H, W, C)).astype(np.float32)
    expected = numpy_im2col(data, K, S, D, P)
    cols = np.full((32, 32), np.nan, np.float32)
    emu.emulate(im2col_tiles(N, H, W, C, K, S, D, P, 16, 16), {"data": data, "cols": cols})
    np.testing.assert_array_equal(cols[: expected.shape[0], : expected.shape[1]], expected)
    assert not cols[expected.shape[0] :].any() and not cols[:, expected.shape[1] :].any()
