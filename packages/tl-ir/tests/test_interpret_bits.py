"""Bit operations in the reference interpreter, against numpy at every integer width up
to 64 bits: ``>>`` is arithmetic for signed dtypes and logical for unsigned ones,
``<<``, ``+``, ``*`` and casts wrap around, ``T.reinterpret`` reads the bits; and the
Philox random-number code (64-bit products shifted right by 32) gives Random123's
known answers and TileLang's random stream under the interpreter."""

import sys
from pathlib import Path

import numpy as np
import pytest

import tl_ir.language as T
from tl_ir.interpret import run

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from integration_tests.builtin_kernels import (
    expected_rand_1d,
    philox_blocks,
    tilelang_rand_1d,
)
from integration_tests.philox_reference import KNOWN_ANSWERS

N = 12


def shifts(dtype: str):
    @T.prim_func
    def main(
        A: T.Tensor((N,), dtype),
        S: T.Tensor((N,), dtype),
        Right: T.Tensor((N,), dtype),
        Left: T.Tensor((N,), dtype),
        Mixed: T.Tensor((N,), dtype),
    ):
        with T.Kernel(1, threads=1):
            for i in T.serial(N):
                Right[i] = A[i] >> S[i]
                Left[i] = A[i] << S[i]
                Mixed[i] = (A[i] ^ S[i]) | (~A[i] & S[i]) + A[i] * A[i]

    return main


@pytest.mark.parametrize("dtype", ["int64", "uint64", "int32", "uint32", "int8", "uint8"])
def test_shifts_and_bitwise_ops_match_numpy(dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(7)
    a = rng.integers(info.min, info.max, N, dtype=dtype, endpoint=True)
    a[:3] = [info.min, info.max, info.min + 1 if info.min < 0 else info.max - 1]
    s = rng.integers(0, info.bits, N).astype(dtype)
    s[:3] = [info.bits - 1, 1, info.bits - 1]
    right, left, mixed = (np.zeros(N, dtype) for _ in range(3))
    run(shifts(dtype), [a, s, right, left, mixed])
    np.testing.assert_array_equal(right, a >> s)  # numpy: arithmetic iff signed
    np.testing.assert_array_equal(left, a << s)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(mixed, (a ^ s) | ((~a & s) + a * a))


def test_right_shift_of_64_bit_values_by_kind():
    a = np.array([-(2**63), -5, 2**62 + 3], np.int64)
    signed = shifts_of(a, np.full(3, 33, np.int64))
    unsigned = shifts_of(a.view(np.uint64), np.full(3, 33, np.uint64))
    assert signed.tolist() == [-(2**30), -1, (2**62 + 3) >> 33]  # sign-filled
    assert unsigned.tolist() == [2**30, (2**64 - 5) >> 33, (2**62 + 3) >> 33]  # zero-filled


def shifts_of(a: np.ndarray, by: np.ndarray) -> np.ndarray:
    @T.prim_func
    def main(
        A: T.Tensor((3,), str(a.dtype)),
        S: T.Tensor((3,), str(a.dtype)),
        R: T.Tensor((3,), str(a.dtype)),
    ):
        with T.Kernel(1, threads=1):
            for i in T.serial(3):
                R[i] = A[i] >> S[i]

    out = np.zeros(3, a.dtype)
    run(main, [a, by, out])
    return out


def test_a_shift_past_the_width_is_an_error():
    with pytest.raises(ValueError, match="shift by 64 of a 64-bit uint64 value is undefined"):
        shifts_of(np.ones(3, np.uint64), np.full(3, 64, np.uint64))


def test_reinterpret_and_narrowing_casts_read_and_wrap_bits():
    @T.prim_func
    def main(
        F: T.Tensor((2,), "float64"), W: T.Tensor((2,), "uint64"), L: T.Tensor((2,), "uint32")
    ):
        with T.Kernel(1, threads=1):
            for i in T.serial(2):
                W[i] = T.reinterpret("uint64", F[i])
                L[i] = T.Cast("uint32", W[i] >> T.uint64(20))

    f = np.array([1.5, -(2.0**-3)])
    w, low = np.zeros(2, np.uint64), np.zeros(2, np.uint32)
    run(main, [f, w, low])
    np.testing.assert_array_equal(w, f.view(np.uint64))
    np.testing.assert_array_equal(low, (f.view(np.uint64) >> np.uint64(20)).astype(np.uint32))


def test_philox_gives_random123s_known_answers_and_tilelangs_stream():
    counters = np.array([c for c, _, _ in KNOWN_ANSWERS], dtype=np.uint32)
    keys = np.array([k for _, k, _ in KNOWN_ANSWERS], dtype=np.uint32)
    out = np.zeros((3, 4), dtype=np.uint32)
    run(philox_blocks(), [counters, keys, out])
    np.testing.assert_array_equal(out, np.array([o for _, _, o in KNOWN_ANSWERS], np.uint32))
    m, seed = 128, 42
    outputs = [np.zeros(m, np.uint32), np.zeros(m, np.float32)]
    outputs += [np.zeros(m, np.float32), np.zeros(m, np.float64)]
    run(tilelang_rand_1d(m, seed), outputs)
    expected = expected_rand_1d(m, seed)
    np.testing.assert_array_equal(outputs[0], expected["A"])
    np.testing.assert_array_equal(outputs[1], expected["B"])
    np.testing.assert_allclose(outputs[2], expected["D"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outputs[3], expected["E"], rtol=1e-12, atol=1e-12)
