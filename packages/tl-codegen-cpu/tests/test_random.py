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
from integration_tests.philox_reference import (
    KNOWN_ANSWERS,
    curand_stream,
    curand_uniform,
    philox4x32_10,
)
from tl_backend_api import build_artifact, create_backend_context
from tl_ir.errors import KernelSyntaxError, KernelTypeError, UnsupportedError
from tl_ir.language._random import philox4x32_10 as emit_philox

TARGETS = ("c", "llvm")


def _load(func: Any, target: str, tmp_path: Path) -> Any:
    return tl_runtime.load(build_artifact(create_backend_context(target), func, tmp_path / target))


def philox_blocks() -> Any:
    """One Philox4x32-10 block per row of C and K, by the generator's own IR."""

    @T.prim_func
    def main(
        C: T.Tensor((3, 4), "uint32"), K: T.Tensor((3, 2), "uint32"), O: T.Tensor((3, 4), "uint32")
    ):
        with T.Kernel(3, threads=1) as b:
            work = T.alloc_local((12,), "uint32")
            emit_philox(work, 8, [C[b, 0], C[b, 1], C[b, 2], C[b, 3]], [K[b, 0], K[b, 1]], work, 0)
            for i in T.serial(4):
                O[b, i] = work[8 + i]

    return main


def test_the_reference_gives_random123s_known_answers() -> None:
    for counter, key, output in KNOWN_ANSWERS:
        assert philox4x32_10(counter, key) == list(output)


@pytest.mark.parametrize("target", TARGETS)
def test_the_ir_block_function_gives_random123s_known_answers(
    target: str, tmp_path: Path
) -> None:
    counters = np.array([c for c, _, _ in KNOWN_ANSWERS], dtype=np.uint32)
    keys = np.array([k for _, k, _ in KNOWN_ANSWERS], dtype=np.uint32)
    out = np.zeros((3, 4), dtype=np.uint32)
    _load(philox_blocks(), target, tmp_path)(counters, keys, out)
    np.testing.assert_array_equal(out, np.array([o for _, _, o in KNOWN_ANSWERS], np.uint32))


def tilelang_rand_1d(M: int, seed: int) -> Any:
    """TileLang's examples/rand (one thread per block draws 128 numbers in order), with a
    float32 uniform and a float32/float64 normal draw after the words."""
    num_per_thread = 128
    threads = 1
    blk_M = num_per_thread * threads

    @T.prim_func
    def main(
        A: T.Tensor((M,), "uint32"),
        B: T.Tensor((M,), "float32"),
        D: T.Tensor((M,), "float32"),
        E: T.Tensor((M,), "float64"),
    ):
        with T.Kernel(T.ceildiv(M, threads * num_per_thread), threads=threads) as bx:
            tx = T.get_thread_binding()
            T.rng_init(seed, 0, bx * blk_M + tx * num_per_thread)
            for i, j in T.Parallel(threads, num_per_thread):
                offsets = (bx * threads + i) * num_per_thread
                idx = offsets + j
                if idx < M:
                    A[idx] = T.rng_rand()
            for i, j in T.Parallel(threads, num_per_thread):
                offsets = (bx * threads + i) * num_per_thread
                idx = offsets + j
                if idx < M:
                    B[idx] = T.rng_rand_float()
            for i, j in T.Parallel(threads, num_per_thread):
                offsets = (bx * threads + i) * num_per_thread
                idx = offsets + j
                if idx < M:
                    D[idx] = T.rng_rand_float(dist="normal")
            for i, j in T.Parallel(threads, num_per_thread):
                offsets = (bx * threads + i) * num_per_thread
                idx = offsets + j
                if idx < M:
                    E[idx] = T.rng_rand_float(bit=64, dist="normal")

    return main


def expected_rand_1d(M: int, seed: int) -> dict[str, np.ndarray]:
    """What cuRAND gives TileLang's example: per block, words 0..127 of its stream at
    offset 128 * bx, then 128 uniforms, then Box-Muller normals (pairs of words, the
    second value of each pair used by the next element; float64 from four words)."""
    a, b, d, e = (np.zeros(M, t) for t in (np.uint32, np.float32, np.float32, np.float64))
    for block in range(M // 128):
        words = curand_stream(seed, 0, 128 * block, 128 * 2 + 128 + 2 * 128)
        rows = slice(128 * block, 128 * (block + 1))
        a[rows], b[rows] = words[:128], curand_uniform(words[128:256])
        pairs = words[256:384].reshape(-1, 2).astype(np.float64)
        u = pairs[:, 0] * 2.0**-32 + 2.0**-33
        v = pairs[:, 1] * 2.0**-32 * 2 * np.pi + 2.0**-32 * np.pi
        radius = np.sqrt(-2 * np.log(u))
        d[rows] = np.stack([radius * np.sin(v), radius * np.cos(v)], axis=1).reshape(-1)
        quads = words[384:640].reshape(-1, 4).astype(np.uint64)
        u53 = (quads[:, 0] ^ (quads[:, 1] << np.uint64(21))).astype(np.float64)
        v53 = (quads[:, 2] ^ (quads[:, 3] << np.uint64(21))).astype(np.float64)
        radius = np.sqrt(-2 * np.log(u53 * 2.0**-53 + 2.0**-54))
        angle = (v53 * 2.0**-53 + 2.0**-54) * 2 * np.pi
        e[rows] = np.stack([radius * np.sin(angle), radius * np.cos(angle)], axis=1).reshape(-1)
    return {"A": a, "B": b, "D": d, "E": e}


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
