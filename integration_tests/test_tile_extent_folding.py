"""A tile sliced between two computed bounds whose difference is a constant
(``KV[kv_start:kv_end]``, MLA decode with several splits) has that constant extent on
every target; a difference known only at run time, copied into or out of a tile of
constant extent, copies that many rows (tl_ir.run_time_tiles); run-time extents on
both sides of a copy without a compile-time bound are refused saying what to write
instead (test_run_time_tiles covers the bounded ones)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tl_ir
import tl_ir.language as T
import tl_jit
from tl_ir.errors import UnsupportedError


def split_copy(num_split: int = 2, N: int = 256, block_N: int = 32) -> Any:
    @T.prim_func
    def main(
        KV: T.Tensor((N, 16), "float32"), Out: T.Tensor((num_split, N // num_split, 16), "float32")
    ):
        with T.Kernel(num_split, threads=32) as bz:
            S = T.alloc_shared((block_N, 16), "float32")
            per = N // num_split
            for k in T.serial(per // block_N):
                kv_start = per * bz + k * block_N
                kv_end = per * bz + (k + 1) * block_N
                T.copy(KV[kv_start:kv_end, :], S)
                T.copy(S, Out[bz, k * block_N : (k + 1) * block_N, :])

    return main


def reassigned_bound(N: int = 64) -> Any:
    @T.prim_func
    def main(KV: T.Tensor((N, 16), "float32"), Out: T.Tensor((32, 16), "float32")):
        with T.Kernel(1, threads=32) as bz:
            S = T.alloc_shared((32, 16), "float32")
            start = bz * 8
            end = start + 32
            start = start + 4  # the extent is now 28 at run time, not 32
            T.copy(KV[start:end, :], S)
            T.copy(S, Out)

    return main


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_an_extent_equal_to_a_constant_is_that_constant(target: str) -> None:
    assert "kv_end - kv_start" not in tl_ir.format_ir(split_copy())
    kernel = tl_jit.compile(split_copy(), out_idx=[1], target=target)
    kv = np.random.default_rng(0).standard_normal((256, 16)).astype(np.float32)
    np.testing.assert_array_equal(kernel(kv), kv.reshape(2, 128, 16))


def test_a_bound_assigned_twice_is_not_folded_and_copies_its_run_time_rows() -> None:
    # Not folded: the extent stays run-time (28 rows, not 32); the copy into the 32-row
    # tile becomes a loop over 32 rows guarded by the slice's end (run_time_tiles).
    func = reassigned_bound()
    text = tl_ir.format_ir(func)
    assert "start + tile_i0 < end" in text and "T.copy(KV" not in text
    kernel = tl_jit.compile(func, out_idx=[1], target="c")
    kv = np.arange(64 * 16, dtype=np.float32).reshape(64, 16)
    np.testing.assert_array_equal(kernel(kv)[:28], kv[4:32])


def both_run_time(N: int = 64) -> Any:
    @T.prim_func
    def main(KV: T.Tensor((N, 16), "float32"), Lens: T.Tensor((2,), "int32")):
        with T.Kernel(1, threads=32) as _bz:
            start = Lens[0]
            end = Lens[1]
            T.copy(KV[start:end, :], KV[start + 32 : end + 32, :])

    return main


def test_a_copy_with_run_time_extents_on_both_sides_says_what_to_write() -> None:
    with pytest.raises(
        UnsupportedError, match=r"symbolic extent.*no compile-time upper bound.*T\.min\(n, MAX\)"
    ):
        tl_jit.compile(both_run_time(), target="c")


def ragged_copy(N: int = 40, block_N: int = 16) -> Any:
    # MLA decode's shape with a ragged last block: `kv_end - kv_start` is a run-time
    # value at most block_N (the sequence length is a kernel argument).
    @T.prim_func
    def main(
        KV: T.Tensor((N, 8), "float32"),
        SeqLen: T.Tensor((1,), "int32"),
        Out: T.Tensor((T.ceildiv(N, block_N), block_N, 8), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, block_N), threads=32) as bx:
            S = T.alloc_shared((block_N, 8), "float32")
            T.fill(S, -1)
            kv_start = bx * block_N
            kv_end = T.min(kv_start + block_N, SeqLen[0])
            T.copy(KV[kv_start:kv_end, :], S)
            T.copy(S, Out[bx, :, :])

    return main


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_a_run_time_extent_bounded_by_the_other_tile_copies_that_many_rows(target: str) -> None:
    kernel = tl_jit.compile(ragged_copy(), out_idx=[2], target=target)
    kv = np.arange(40 * 8, dtype=np.float32).reshape(40, 8)
    for seqlen in (40, 21, 0):
        expected = np.full((3, 16, 8), -1, np.float32)
        for block in range(3):
            rows = kv[block * 16 : min(block * 16 + 16, seqlen)]
            expected[block, : len(rows)] = rows
        np.testing.assert_array_equal(kernel(kv, np.array([seqlen], np.int32)), expected)


def moved_start(through_copy: bool, N: int = 64) -> Any:
    # `end` is computed from `start`, then `start` moves back by 8: `end - start` is 40
    # where it is read, not the 32 that substituting `end = start + 32` would prove.
    @T.prim_func
    def main(
        A: T.Tensor((N,), "float32"), S0: T.Tensor((1,), "int32"), B: T.Tensor((N,), "float32")
    ):
        with T.Kernel(1, threads=32) as _bx:
            for i in T.Parallel(N):
                B[i] = -1.0
            start = T.alloc_var("int32")
            start = S0[0]
            end = start + 32
            start = start - 8
            if through_copy:
                S = T.alloc_shared((N,), "float32")
                T.fill(S, 0.0)
                T.copy(A[start:end], S)
                T.copy(S, B)
            else:
                for i in T.Parallel(T.min(end - start, N)):
                    B[i] = A[start + i]

    return main


@pytest.mark.parametrize("target", ["c", "llvm"])
@pytest.mark.parametrize("through_copy", [False, True])
def test_a_bound_from_a_scalar_assigned_twice_covers_its_run_time_value(
    through_copy: bool, target: str
) -> None:
    # The loop (or the copy's loop) covers 64, the other side's bound, not 32.
    kernel = tl_jit.compile(moved_start(through_copy), out_idx=[2], target=target)
    a = np.arange(64, dtype=np.float32)
    expected = np.full(64, 0.0 if through_copy else -1.0, np.float32)
    expected[:40] = a[8:48]
    np.testing.assert_array_equal(kernel(a, np.array([16], np.int32)), expected)


def moved_offset(through_copy: bool, N: int = 64) -> Any:
    # `start` is read from Offsets[0], then the kernel moves Offsets[0] on by 8 and reads it
    # again for `end`: `end - start` is 48 where it is read. Substituting `start` by its
    # value (the load Offsets[0]) would read Offsets after the write and prove 40.
    @T.prim_func
    def main(
        A: T.Tensor((N,), "float32"), Offsets: T.Tensor((1,), "int32"), B: T.Tensor((N,), "float32")
    ):
        with T.Kernel(1, threads=32) as _bx:
            for i in T.Parallel(N):
                B[i] = -1.0
            start = Offsets[0]
            Offsets[0] = start + 8
            end = Offsets[0] + 40
            if through_copy:
                S = T.alloc_shared((N,), "float32")
                T.fill(S, 0.0)
                T.copy(A[start:end], S)
                T.copy(S, B)
            else:
                for i in T.Parallel(T.min(end - start, N)):
                    B[i] = A[start + i]

    return main


@pytest.mark.parametrize("target", ["c", "llvm"])
@pytest.mark.parametrize("through_copy", [False, True])
def test_a_bound_through_memory_the_kernel_writes_covers_its_run_time_value(
    through_copy: bool, target: str
) -> None:
    # 48 elements copied (the copy's extent was folded to 40 and refused, the loop ran 40)
    kernel = tl_jit.compile(moved_offset(through_copy), out_idx=[2], target=target)
    a = np.arange(64, dtype=np.float32)
    offsets = np.array([16], np.int32)
    expected = np.full(64, 0.0 if through_copy else -1.0, np.float32)
    expected[:48] = a[16:64]
    np.testing.assert_array_equal(kernel(a, offsets), expected)
    assert offsets[0] == 24


def test_a_parallel_extent_through_a_scalar_assigned_twice_has_no_bound() -> None:
    with pytest.raises(tl_ir.KernelTypeError, match="run-time extent end - start has no"):

        @T.prim_func
        def main(A: T.Tensor((64,), "float32"), S0: T.Tensor((1,), "int32")):
            with T.Kernel(1, threads=32) as _bx:
                start = T.alloc_var("int32")
                start = S0[0]
                end = start + 32
                start = start - 8
                for i in T.Parallel(end - start):
                    A[start + i] = 1.0
