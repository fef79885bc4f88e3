"""Kernels of TileLang's atomic surface (test_tilelang_language_atomic.py's forms) with
their numpy results, shared by integration_tests/test_atomics_porting.py (c, llvm, the
reference interpreter) and tl-codegen-cuda/tests/test_atomics_porting_emulated.py
(the generated CUDA under the CPU emulation, and nvcc).

Each case: ``build()`` -> PrimFunc, ``arrays()`` -> the inputs by parameter name (the
outputs start as given), ``expected(arrays)`` -> the outputs wanted, by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import tl_ir.language as T

Case = tuple[
    Callable[[], Any], Callable[[], dict[str, Any]], Callable[[dict[str, Any]], dict[str, Any]]
]

M = N = 64
BLOCK = 32


def tile_plus_scalar() -> Any:
    """``T.atomic_add(A[tile], 1.0)``: every element of each block's tile += 1, once."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32")):
        with T.Kernel(M // BLOCK, N // BLOCK, threads=32) as (bx, by):
            T.atomic_add(A[bx * BLOCK : (bx + 1) * BLOCK, by * BLOCK : (by + 1) * BLOCK], 1.0)

    return main


def tile_max_min_scalar() -> Any:
    """Scalar max/min onto overlapping tiles: blocks meet on the rows they share."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(4, threads=64) as bx:
            T.atomic_max(A[bx * 8 : bx * 8 + 32, :], T.float32(0.5) * bx)
            T.atomic_min(B[bx * 8 : bx * 8 + 32, 0:16], T.float32(-1.0) * bx)

    return main


def one_element_tile_plus_scalar() -> Any:
    """TileLang's ``T.atomic_add(B, 1)`` with ``B`` of one element: a tile atomic, once
    per block (not once per thread), after ``T.atomic_add(B, A_local)``."""

    @T.prim_func
    def main(A: T.Tensor((1,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=128) as _:
            a_local = T.alloc_local([1], "float32")
            T.copy(A, a_local)
            T.clear(B)
            T.atomic_add(B, a_local)
            T.atomic_add(B, 1)

    return main


def shared_tile_plus_scalar() -> Any:
    """A scalar onto a shared tile, then the tile out: each element once per block."""

    @T.prim_func
    def main(Out: T.Tensor((4, 16), "int32")):
        with T.Kernel(4, threads=32) as bx:
            s = T.alloc_shared((16,), "int32")
            T.fill(s, bx)
            T.atomic_add(s[0:16], 3)
            T.copy(s, Out[bx, 0:16])

    return main


def load_store() -> Any:
    """TileLang's atomic_load_store_program: B = A through an atomic load and store."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(M // 16, N // 16, threads=32) as (bx, by):
            for i, j in T.Parallel(16, 16):
                val = T.atomic_load(A[bx * 16 + i, by * 16 + j], memory_order="acquire")
                T.atomic_store(B[bx * 16 + i, by * 16 + j], val, memory_order="release")

    return main


def load_store_flag() -> Any:
    """A counter read back atomically after every block added to it, and one thread of
    each block storing a flag: every block sees its own add."""

    @T.prim_func
    def main(
        Count: T.Tensor((1,), "int64"), Seen: T.Tensor((8,), "int64"), Flag: T.Tensor((8,), "int32")
    ):
        with T.Kernel(8, threads=32) as bx:
            tx = T.get_thread_binding()
            if tx == 0:
                T.atomic_add(Count[0], T.int64(1))
                Seen[bx] = T.atomic_load(Count[0])
                T.atomic_store(Flag[bx], bx + 1, memory_order="relaxed")

    return main


def uint64_sum() -> Any:
    """The repro's uint64 sum over a parallel loop, with max/min and a fetching add."""

    @T.prim_func
    def main(A: T.Tensor((256,), "uint64"), Out: T.Tensor((4,), "uint64")):
        with T.Kernel(4, threads=64) as bx:
            for i in T.Parallel(64):
                T.atomic_add(Out[0], A[bx * 64 + i])
                T.atomic_max(Out[1], A[bx * 64 + i])
                T.atomic_min(Out[2], A[bx * 64 + i])

    return main


def or_bits() -> Any:
    """``T.atomic_or`` from every thread of every block onto one word and one word per
    block (int32 and uint64)."""

    @T.prim_func
    def main(Mask: T.Tensor((1,), "int32"), Wide: T.Tensor((4,), "uint64")):
        with T.Kernel(4, threads=32) as bx:
            tx = T.get_thread_binding()
            T.atomic_or(Mask[0], T.shift_left(1, tx), memory_order="release")
            T.atomic_or(Wide[bx], T.shift_left(T.uint64(1), T.Cast("uint64", tx + 32 * (bx % 2))))

    return main


def _tile_plus_scalar_arrays() -> dict[str, Any]:
    return {"A": np.random.default_rng(1).standard_normal((M, N)).astype(np.float32)}


def _max_min_arrays() -> dict[str, Any]:
    rng = np.random.default_rng(2)
    return {
        "A": rng.standard_normal((M, N)).astype(np.float32),
        "B": rng.standard_normal((M, N)).astype(np.float32),
    }


def _max_min_expected(arrays: dict[str, Any]) -> dict[str, Any]:
    a, b = arrays["A"].copy(), arrays["B"].copy()
    for bx in range(4):
        a[bx * 8 : bx * 8 + 32, :] = np.maximum(a[bx * 8 : bx * 8 + 32, :], np.float32(0.5 * bx))
        b[bx * 8 : bx * 8 + 32, 0:16] = np.minimum(b[bx * 8 : bx * 8 + 32, 0:16], np.float32(-bx))
    return {"A": a, "B": b}


def _uint64_arrays() -> dict[str, Any]:
    big = np.uint64(2**63)
    a = np.arange(256, dtype=np.uint64) * np.uint64(3) + big  # past the int64 range
    return {"A": a, "Out": np.array([0, 0, 2**64 - 1, 0], np.uint64)}


def _uint64_expected(arrays: dict[str, Any]) -> dict[str, Any]:
    a = arrays["A"]
    total = int(a.astype(object).sum()) % 2**64
    return {"Out": np.array([total, a.max(), a.min(), 0], np.uint64)}


def _or_expected(arrays: dict[str, Any]) -> dict[str, Any]:
    wide = [sum(1 << (t + 32 * (b % 2)) for t in range(32)) for b in range(4)]
    return {"Mask": np.array([-1], np.int32), "Wide": np.array(wide, np.uint64)}


CASES: dict[str, Case] = {
    "tile_plus_scalar": (
        tile_plus_scalar,
        _tile_plus_scalar_arrays,
        lambda arrays: {"A": arrays["A"] + np.float32(1)},
    ),
    "tile_max_min_scalar": (tile_max_min_scalar, _max_min_arrays, _max_min_expected),
    "one_element_tile_plus_scalar": (
        one_element_tile_plus_scalar,
        lambda: {"A": np.array([2.5], np.float32), "B": np.array([7.0], np.float32)},
        lambda arrays: {"B": np.array([3.5], np.float32)},
    ),
    "shared_tile_plus_scalar": (
        shared_tile_plus_scalar,
        lambda: {"Out": np.zeros((4, 16), np.int32)},
        lambda arrays: {"Out": np.repeat(np.arange(4, dtype=np.int32)[:, None] + 3, 16, axis=1)},
    ),
    "load_store": (
        load_store,
        lambda: {
            "A": np.random.default_rng(3).standard_normal((M, N)).astype(np.float32),
            "B": np.zeros((M, N), np.float32),
        },
        lambda arrays: {"B": arrays["A"]},
    ),
    "uint64_sum": (uint64_sum, _uint64_arrays, _uint64_expected),
    "or_bits": (
        or_bits,
        lambda: {"Mask": np.zeros(1, np.int32), "Wide": np.zeros(4, np.uint64)},
        _or_expected,
    ),
}
