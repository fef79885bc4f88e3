"""A negative element index counts from the end of its dim, as in Python and TileLang
(``A[-1]`` is the last element, ``A[-i - 1]`` walks backwards); before, a constant
one was refused and an affine one read and wrote outside the buffer (silently, or a
heap corruption). Hand-written vector accesses (``T.Ramp``, ``T.Broadcast``) failed to
build on ``c`` (``int32_t4``) and stored one lane per iteration on ``llvm``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tl_jit
import tl_jit.language as T
from integration_tests.interpreter_target import compile_for
from tl_ir.errors import KernelTypeError

TARGETS = ["c", "llvm"]


def _backwards() -> Any:
    @T.prim_func
    def backwards(
        A: T.Tensor((16,), "float32"), M: T.Tensor((3, 5), "int32"), B: T.Tensor((6,), "float32")
    ):
        with T.Kernel(1, threads=1):
            for i in T.serial(4):
                B[i] = A[-i - 1]
            B[4] = A[-16] + T.Cast("float32", M[-1, -2])
            B[-1] = T.Cast("float32", M[-3, 0])

    return backwards


@pytest.mark.parametrize("target", [*TARGETS, "interpreter"])
def test_negative_indices_count_from_the_end(target: str) -> None:
    kernel = compile_for(_backwards(), target, out_idx=[-1])
    a = np.arange(16, dtype=np.float32)
    m = np.arange(15, dtype=np.int32).reshape(3, 5) * 10
    got = kernel(a, m)
    np.testing.assert_array_equal(got, [15, 14, 13, 12, 0 + 130, 0])


def _mixed_sign_ramps() -> tuple[Any, Any]:
    @T.prim_func
    def gather(A: T.Tensor((1024,), "float32"), B: T.Tensor((4, 4), "float32")):
        with T.Kernel(1, threads=1):
            for t in T.serial(4):
                B[t, T.Ramp(0, 1, 4)] = A[T.Ramp(t - 2, 1, 4)]

    @T.prim_func
    def scatter(B: T.Tensor((4, 4), "float32"), A: T.Tensor((1024,), "float32")):
        with T.Kernel(1, threads=1):
            for t in T.serial(4):
                A[T.Ramp(t - 2, 1, 4)] = B[t, T.Ramp(0, 1, 4)]

    return gather, scatter


@pytest.mark.parametrize("target", TARGETS)
def test_vector_indices_wrap_lane_by_lane(target: str) -> None:
    gather, scatter = _mixed_sign_ramps()
    a = np.arange(1024, dtype=np.float32)
    b = np.zeros((4, 4), np.float32)
    compile_for(gather, target)(a, b)
    want = np.array([[1022, 1023, 0, 1], [1023, 0, 1, 2], [0, 1, 2, 3], [1, 2, 3, 4]])
    np.testing.assert_array_equal(b, want)

    b = np.arange(16, dtype=np.float32).reshape(4, 4)
    a = np.full(1024, -1.0, np.float32)
    compile_for(scatter, target)(b, a)
    want_a = np.full(1024, -1.0, np.float32)
    for t in range(4):
        for lane in range(4):
            want_a[(t - 2 + lane) % 1024] = b[t, lane]
    np.testing.assert_array_equal(a, want_a)


def _vector_stores() -> Any:
    @T.prim_func
    def vector_stores(X: T.Tensor((32,), "int8"), A: T.Tensor((8,), "float32"), v: T.int8):
        with T.Kernel(1, threads=1):
            X[T.Ramp(0, 1, 32)] = T.Broadcast(v, 32)
            # A vector store reads every lane before it writes one.
            A[T.Ramp(1, 1, 4)] = A[T.Ramp(0, 1, 4)] * T.Broadcast(T.float32(2), 4)

    return vector_stores


@pytest.mark.parametrize("target", TARGETS)
def test_hand_written_vector_stores(target: str) -> None:
    x = np.zeros(32, np.int8)
    a = np.arange(8, dtype=np.float32)
    compile_for(_vector_stores(), target)(x, a, 7)
    np.testing.assert_array_equal(x, np.full(32, 7, np.int8))
    np.testing.assert_array_equal(a, [0, 0, 2, 4, 6, 5, 6, 7])


def test_constant_index_before_the_start_is_refused() -> None:
    with pytest.raises(KernelTypeError, match=r"constant index -17 of buffer A .*\[-16, 16\)"):

        @T.prim_func
        def too_far(A: T.Tensor((16,), "float32")):
            with T.Kernel(1, threads=1):
                A[-17] = 1.0


def test_an_index_of_unknown_sign_is_left_alone() -> None:
    """``A[shift + i]``: neither provably negative nor not; the kernel reads what the
    index addresses (TileLang does the same)."""

    @T.prim_func
    def shifted(shift: T.int32, A: T.Tensor((16,), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(4):
                B[i] = A[shift + i]

    a = np.arange(16, dtype=np.float32)
    b = np.zeros(4, np.float32)
    tl_jit.compile(shifted, target="c")(3, a, b)
    np.testing.assert_array_equal(b, [3, 4, 5, 6])
