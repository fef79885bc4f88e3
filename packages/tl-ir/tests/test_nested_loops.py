"""TileLang's rules on what a T.Parallel loop may hold (`tl_ir.nested_loops`), from its
nested-loop checker's tests: refused as ValueError when the kernel is parsed."""

from __future__ import annotations

import pytest

import tl_ir.language as T
from tl_ir.errors import KernelValueError


def test_a_statement_beside_an_inner_parallel_loop_is_refused() -> None:
    # Accepted before, it zeroed elements another iteration wrote (B[1..15] = 0).
    with pytest.raises(ValueError, match=r"nested inside the T\.Parallel loop over i"):

        @T.prim_func
        def noncontinuous(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float32")):
            with T.Kernel(1, threads=256):
                for i in T.Parallel(16):
                    B[i] = 0
                    for j in T.Parallel(16):
                        B[i * 16 + j] = A[i * 16 + j] + 1.0


def test_a_parallel_loop_under_a_serial_one_inside_a_parallel_one_is_refused() -> None:
    with pytest.raises(KernelValueError, match="over k is nested"):

        @T.prim_func
        def parallel_serial_parallel(
            A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float32")
        ):
            with T.Kernel(1, threads=256):
                for i in T.Parallel(2):
                    for j in T.serial(16):
                        for k in T.Parallel(8):
                            B[i * 128 + j * 8 + k] = A[i * 128 + j * 8 + k]


def test_tile_ops_and_pipelined_loops_inside_a_parallel_loop_are_refused() -> None:
    with pytest.raises(KernelValueError, match=r"tile operation T\.copy"):

        @T.prim_func
        def copy_inside(A: T.Tensor((4, 8), "float32"), B: T.Tensor((4, 8), "float32")):
            with T.Kernel(1, threads=4):
                for i in T.Parallel(4):
                    T.copy(A[i, 0:8], B[i, 0:8])

    with pytest.raises(KernelValueError, match=r"T\.Pipelined loop over k"):

        @T.prim_func
        def pipelined_inside(A: T.Tensor((4, 8), "float32"), B: T.Tensor((4, 8), "float32")):
            with T.Kernel(1, threads=4):
                for i in T.Parallel(4):
                    for k in T.Pipelined(8, num_stages=1):
                        B[i, k] = A[i, k]


def test_direct_nests_element_atomics_and_serial_loops_are_allowed() -> None:
    @T.prim_func
    def allowed(A: T.Tensor((4, 8), "float32"), B: T.Tensor((4, 8), "float32")):
        with T.Kernel(1, threads=32):
            acc = T.alloc_fragment((4,), "float32")
            T.clear(acc)
            for i in T.Parallel(4):
                for j in T.Parallel(8):
                    B[i, j] = A[i, j]
            for i in T.Parallel(4):
                for k in T.serial(8):
                    acc[i] += A[i, k]
                T.atomic_add(B[i, 0], acc[i])
            for k in T.Pipelined(2, num_stages=1):
                for i, j in T.Parallel(4, 4):
                    B[i, k * 4 + j] = B[i, k * 4 + j] * 2.0

    assert allowed is not None
