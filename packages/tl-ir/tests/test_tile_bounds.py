"""`tl_ir.tile_bounds`: a tile access that certainly leaves its tile is refused when the
kernel is built (TileLang's attention-sink backward example filled a 2-element
fragment from a 64-iteration ``T.Parallel`` loop: on the CPU targets it wrote past the
tile, silently); one that may stay inside is left to the kernel."""

from __future__ import annotations

from typing import Any

import pytest

import tl_ir.language as T
from tl_ir.errors import KernelTypeError


def _sinks(size: int, guarded: bool) -> Any:
    @T.prim_func
    def sinks_kernel(S: T.Tensor((4,), "float32"), Out: T.Tensor((4, 64), "float32")):
        with T.Kernel(4, threads=64) as by:
            acc = T.alloc_fragment([64], "float32")
            sinks = T.alloc_fragment([size], "float32")
            T.fill(acc, 1.0)
            for i in T.Parallel(64):
                if guarded:
                    if i < size:
                        sinks[i] = S[by]
                else:
                    sinks[i] = S[by]
            for i in T.Parallel(64):
                acc[i] = acc[i] + T.if_then_else(i < size, sinks[T.min(i, size - 1)], 0.0)
            T.copy(acc, Out[by, :])

    return sinks_kernel


def test_a_fragment_smaller_than_its_loop_is_refused() -> None:
    with pytest.raises(
        KernelTypeError,
        match=r"index i of fragment tile sinks is out of bounds in dim 0: the loops around "
        r"it take it to 63, the tile has extent 2 \(shape \(2,\)\)",
    ):
        _sinks(2, guarded=False)
    _sinks(64, guarded=False)  # sized for its loop
    _sinks(2, guarded=True)  # the kernel's own if keeps it inside


def test_affine_indices_of_shared_tiles_and_both_ends() -> None:
    def build(offset: int, scale: int) -> Any:
        @T.prim_func
        def shifted(A: T.Tensor((16, 8), "float32")):
            with T.Kernel(1, threads=32):
                tile = T.alloc_shared((8, 8), "float32")
                for i, j in T.grid(4, 8):
                    tile[scale * i + offset, j] = A[i, j]

        return shifted

    build(0, 2)  # rows 0..6
    build(1, 2)  # rows 1..7
    with pytest.raises(KernelTypeError, match=r"shared tile tile .* take it to 8, .*extent 8"):
        build(2, 2)
    with pytest.raises(KernelTypeError, match=r"take it to -9"):
        build(-9, 1)  # below -extent: no wrap reaches it


def test_what_may_stay_inside_is_left_to_the_kernel() -> None:
    @T.prim_func
    def unknown(A: T.Tensor((64,), "float32"), n: T.int32):
        with T.Kernel(1, threads=32):
            tile = T.alloc_fragment((8,), "float32")
            for i in T.serial(n):  # a run-time extent
                tile[i] = A[i]
            for i in T.serial(64):
                tile[i // 8] = A[i]  # not affine: 0..7 anyway
                tile[i % 8] = A[i]
            for i in T.serial(64):
                tile[T.min(i, 7)] = A[i]
            for i in T.serial(0):  # never runs
                tile[i + 100] = A[i]

    assert unknown is not None
