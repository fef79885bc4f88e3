"""``T.rng_init`` / ``T.rng_rand`` / ``T.rng_rand_float`` on c and llvm: the Philox4x32-10
block function written in the kernel's IR gives Random123's known answers, and TileLang's
random-number example draws cuRAND's stream (the same words on both targets)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

import tl_ir.language as T
import tl_runtime
from integration_tests.builtin_kernels import expected_rand_1d, philox_blocks, tilelang_rand_1d
from integration_tests.philox_reference import KNOWN_ANSWERS, curand_stream, philox4x32_10
from tl_backend_api import build_artifact, create_backend_context
from tl_ir.errors import KernelSyntaxError, KernelTypeError, UnsupportedError

TARGETS = ("c", "llvm")


def _load(func: Any, target: str, tmp_path: Path) -> Any:
    return tl_runtime.load(build_artifact(create_backend_context(target), func, tmp_path / target))


def test_the_reference_gives_random123s_known_answers() -> None:
    for counter, key, output in KNOWN_ANSWERS:
        assert philox4x32_10(counter, key) == list(output)


@pytest.mark.parametrize("target", TARGETS)
def test_the_ir_block_function_gives_random123s_known_answers(target: str, tmp_path: Path) -> None:
    counters = np.array([c for c, _, _ in KNOWN_ANSWERS], dtype=np.uint32)
    keys = np.array([k for _, k, _ in KNOWN_ANSWERS], dtype=np.uint32)
    out = np.zeros((3, 4), dtype=np.uint32)
    _load(philox_blocks(), target, tmp_path)(counters, keys, out)
    np.testing.assert_array_equal(out, np.array([o for _, _, o in KNOWN_ANSWERS], np.uint32))


@pytest.mark.parametrize("target", TARGETS)
def test_tilelangs_random_example_draws_curands_stream(target: str, tmp_path: Path) -> None:
    M, seed = 256, 42
    outputs = {
        "A": np.zeros(M, np.uint32),
        "B": np.zeros(M, np.float32),
        "D": np.zeros(M, np.float32),
        "E": np.zeros(M, np.float64),
    }
    _load(tilelang_rand_1d(M, seed), target, tmp_path)(*outputs.values())
    expected = expected_rand_1d(M, seed)
    np.testing.assert_array_equal(outputs["A"], expected["A"])  # bit for bit
    np.testing.assert_array_equal(outputs["B"], expected["B"])  # bit for bit
    np.testing.assert_allclose(outputs["D"], expected["D"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outputs["E"], expected["E"], rtol=1e-12, atol=1e-12)


def per_thread_draws(seed: int) -> Any:
    """Default streams (seq = the thread's index in the grid), drawn in per-thread code."""

    @T.prim_func
    def main(A: T.Tensor((2, 64, 3), "uint32")):
        with T.Kernel(2, threads=64) as bx:
            tx = T.get_thread_binding()
            T.rng_init(seed)
            for k in T.serial(3):
                A[bx, tx, k] = T.rng_rand()

    return main


def test_each_thread_draws_its_own_stream(tmp_path: Path) -> None:
    seed = (7 << 32) | 99  # both halves of the 64-bit key
    out = np.zeros((2, 64, 3), np.uint32)
    _load(per_thread_draws(seed), "c", tmp_path)(out)
    for bx in range(2):
        for tx in (0, 17, 63):
            np.testing.assert_array_equal(out[bx, tx], curand_stream(seed, tx + 64 * bx, 0, 3))


def test_what_cannot_mean_the_same_is_refused() -> None:
    with pytest.raises(KernelSyntaxError, match=r"T.rng_rand\(\): call T.rng_init"):

        @T.prim_func
        def no_init(A: T.Tensor((4,), "uint32")):
            with T.Kernel(1, threads=4) as _bx:
                A[0] = T.rng_rand()

    with pytest.raises(UnsupportedError, match=r"only curandStatePhilox4_32_10_t"):

        @T.prim_func
        def other_generator(A: T.Tensor((4,), "uint32")):
            with T.Kernel(1, threads=4) as _bx:
                T.rng_init(1, generator="curandStateXORWOW_t")

    with pytest.raises(UnsupportedError, match=r"T.Parallel loop of a block of 4 threads"):

        @T.prim_func
        def spread(A: T.Tensor((16,), "uint32")):
            with T.Kernel(1, threads=4) as _bx:
                T.rng_init(1)
                for i in T.Parallel(16):
                    A[i] = T.rng_rand()

    with pytest.raises(KernelTypeError, match=r"bit=...\): expected 32 or 64"):

        @T.prim_func
        def bad_bits(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=4) as _bx:
                T.rng_init(1)
                A[0] = T.rng_rand_float(bit=16)
