"""Kernels whose tile ops have run-time extents with a compile-time bound (issue 20,
tl_ir.run_time_tiles), shared by the c/llvm tests and the CUDA tests (which lower the
same kernels, compile them with nvcc and run them under the CPU emulation), each with
its numpy reference.

Every kernel reads the valid length ``L[0]`` at run time; rows at and past it are
left as they were (the references say which value that is)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import tl_ir.language as T

ROWS, COLS, BLOCK = 40, 8, 16


def global_to_global(N: int = ROWS, block: int = BLOCK) -> Any:
    """``T.copy(A[s:e, :], Out[s:e, :])``: run-time extents on both sides (global)."""

    @T.prim_func
    def main(
        A: T.Tensor((N, COLS), "float32"),
        L: T.Tensor((1,), "int32"),
        Out: T.Tensor((N, COLS), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            s = bx * block
            e = T.min(s + block, L[0])
            T.copy(A[s:e, :], Out[s:e, :])

    return main


def into_sliced_shared(N: int = ROWS, block: int = BLOCK) -> Any:
    """``T.copy(A[s:e, :], S[0 : e - s, :])``: a sliced shared tile with a run-time
    extent (bounded by the tile's rows); the rest of the tile keeps its fill."""

    @T.prim_func
    def main(
        A: T.Tensor((N, COLS), "float32"),
        L: T.Tensor((1,), "int32"),
        Out: T.Tensor((N, COLS), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            S = T.alloc_shared((block, COLS), "float32")
            T.fill(S, -1)
            s = bx * block
            e = T.min(s + block, L[0])
            T.copy(A[s:e, :], S[0 : e - s, :])
            T.copy(S, Out[s : s + block, :])

    return main


def partial_fill(N: int = ROWS, block: int = BLOCK) -> Any:
    """``T.fill(S[0:n, :], -1)`` on a shared tile and ``T.clear(F[0:n, :])`` on a
    fragment, ``n`` the block's valid rows."""

    @T.prim_func
    def main(
        A: T.Tensor((N, COLS), "float32"),
        L: T.Tensor((1,), "int32"),
        Out: T.Tensor((N, COLS), "float32"),
        Cleared: T.Tensor((N, COLS), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            S = T.alloc_shared((block, COLS), "float32")
            F = T.alloc_fragment((block, COLS), "float32")
            T.copy(A[bx * block, 0], S)
            T.copy(A[bx * block, 0], F)
            n = T.max(T.min(block, L[0] - bx * block), 0)
            T.fill(S[0:n, :], -1)
            T.clear(F[0:n, :])
            T.copy(S, Out[bx * block, 0])
            T.copy(F, Cleared[bx * block, 0])

    return main


def fragment_to_global(N: int = ROWS, block: int = BLOCK) -> Any:
    """``T.copy(F[0 : e - s, :], Out[s:e, :])``: out of a sliced fragment into global
    memory, run-time extents on both sides."""

    @T.prim_func
    def main(
        A: T.Tensor((N, COLS), "float32"),
        L: T.Tensor((1,), "int32"),
        Out: T.Tensor((N, COLS), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            F = T.alloc_fragment((block, COLS), "float32")
            T.copy(A[bx * block, 0], F)
            for i, j in T.Parallel(block, COLS):
                F[i, j] = F[i, j] * 2
            s = bx * block
            e = T.min(s + block, L[0])
            T.copy(F[0 : e - s, :], Out[s:e, :])

    return main


def atomic_rows(N: int = ROWS, block: int = BLOCK) -> Any:
    """``T.atomic_add(Out[0 : e - s, :], F[0 : e - s, :])``: every block adds its valid
    rows into the same ``block`` rows of ``Out`` (whole numbers: any order is exact)."""

    @T.prim_func
    def main(
        A: T.Tensor((N, COLS), "float32"),
        L: T.Tensor((1,), "int32"),
        Out: T.Tensor((N, COLS), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            F = T.alloc_fragment((block, COLS), "float32")
            T.copy(A[bx * block, 0], F)
            s = bx * block
            e = T.min(s + block, L[0])
            T.atomic_add(Out[0 : e - s, :], F[0 : e - s, :])

    return main


def scan_rows(N: int = ROWS, block: int = BLOCK) -> Any:
    """``T.cumsum(F[0:n, :], dim=0)`` in place on a fragment, in a serial loop over the
    blocks of rows: prefix sums over each block's valid rows; the other rows keep
    their values."""

    @T.prim_func
    def main(
        A: T.Tensor((N, COLS), "float32"),
        L: T.Tensor((1,), "int32"),
        Out: T.Tensor((N, COLS), "float32"),
    ):
        with T.Kernel(1, threads=32) as _bx:
            F = T.alloc_fragment((block, COLS), "float32")
            for k in T.serial(T.ceildiv(N, block)):
                T.copy(A[k * block, 0], F)
                n = T.max(T.min(block, L[0] - k * block), 0)
                T.cumsum(F[0:n, :], dim=0)
                T.copy(F, Out[k * block, 0])

    return main


def reverse_max_rows(N: int = ROWS, block: int = BLOCK) -> Any:
    """``T.cummax(S[0:n, :], D[0:n, :], dim=0, reverse=True)`` of the negated rows (so
    a padding other than the identity would show) into another tile filled with -1."""

    @T.prim_func
    def main(
        A: T.Tensor((N, COLS), "float32"),
        L: T.Tensor((1,), "int32"),
        Out: T.Tensor((N, COLS), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            S = T.alloc_shared((block, COLS), "float32")
            D = T.alloc_shared((block, COLS), "float32")
            T.copy(A[bx * block, 0], S)
            for i, j in T.Parallel(block, COLS):
                S[i, j] = -S[i, j]
            T.fill(D, -1)
            n = T.max(T.min(block, L[0] - bx * block), 0)
            T.cummax(S[0:n, :], D[0:n, :], dim=0, reverse=True)
            T.copy(D, Out[bx * block, 0])

    return main


def _rows(length: int) -> np.ndarray:
    return np.arange(ROWS) < length


def expected_global_to_global(a: np.ndarray, length: int, out: np.ndarray) -> tuple[Any, ...]:
    """Rows below ``length`` copied, the rest of ``out`` unchanged."""
    return (np.where(_rows(length)[:, None], a, out),)


def expected_into_sliced_shared(a: np.ndarray, length: int, out: np.ndarray) -> tuple[Any, ...]:
    """Rows below ``length`` copied, the other rows -1 (the tile's fill)."""
    return (np.where(_rows(length)[:, None], a, -1).astype(np.float32),)


def expected_partial_fill(
    a: np.ndarray, length: int, out: np.ndarray, cleared: np.ndarray
) -> tuple[Any, ...]:
    """Rows below ``length`` -1 (``Out``) and 0 (``Cleared``), the others ``a``'s."""
    valid = _rows(length)[:, None]
    return np.where(valid, -1, a).astype(np.float32), np.where(valid, 0, a).astype(np.float32)


def expected_fragment_to_global(a: np.ndarray, length: int, out: np.ndarray) -> tuple[Any, ...]:
    """Rows below ``length`` doubled, the rest of ``out`` unchanged."""
    return (np.where(_rows(length)[:, None], 2 * a, out),)


def expected_atomic_rows(a: np.ndarray, length: int, out: np.ndarray) -> tuple[Any, ...]:
    """``out`` plus, in row ``r < BLOCK``, every block's row ``r`` below ``length``."""
    result = out.copy()
    for row in range(min(length, ROWS)):
        result[row % BLOCK] += a[row]
    return (result,)


def _blocks_of_valid_rows(length: int) -> list[range]:
    valid = min(max(length, 0), ROWS)
    return [range(s, min(s + BLOCK, valid)) for s in range(0, valid, BLOCK)]


def expected_scan_rows(a: np.ndarray, length: int, out: np.ndarray) -> tuple[Any, ...]:
    """Rows below ``length``: prefix sums within their block; the others ``a``'s."""
    result = a.copy()
    for rows in _blocks_of_valid_rows(length):
        result[rows.start : rows.stop] = np.cumsum(a[rows.start : rows.stop], axis=0)
    return (result,)


def expected_reverse_max_rows(a: np.ndarray, length: int, out: np.ndarray) -> tuple[Any, ...]:
    """Rows below ``length``: running maxima of ``-a`` from the block's last valid row
    back; the others -1."""
    result = np.full_like(a, -1)
    for rows in _blocks_of_valid_rows(length):
        part = -a[rows.start : rows.stop]
        result[rows.start : rows.stop] = np.maximum.accumulate(part[::-1], axis=0)[::-1]
    return (result,)


#: name: (kernel builder, output parameter names, reference: ``(A, length, *outputs
#: before the call)`` to the outputs after it).
CASES: dict[str, tuple[Callable[[], Any], tuple[str, ...], Callable[..., Any]]] = {
    "global_to_global": (global_to_global, ("Out",), expected_global_to_global),
    "into_sliced_shared": (into_sliced_shared, ("Out",), expected_into_sliced_shared),
    "partial_fill": (partial_fill, ("Out", "Cleared"), expected_partial_fill),
    "fragment_to_global": (fragment_to_global, ("Out",), expected_fragment_to_global),
    "atomic_rows": (atomic_rows, ("Out",), expected_atomic_rows),
    "scan_rows": (scan_rows, ("Out",), expected_scan_rows),
    "reverse_max_rows": (reverse_max_rows, ("Out",), expected_reverse_max_rows),
}

#: Valid lengths every case runs with: a ragged last block, all rows, none, one block.
LENGTHS = (21, ROWS, 0, BLOCK)


def inputs() -> np.ndarray:
    """The input ``A`` of every case."""
    return np.arange(ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS)


def outputs_before(count: int) -> list[np.ndarray]:
    """The outputs of a case before the call: every element 7 (a value no case writes)."""
    return [np.full((ROWS, COLS), 7.0, np.float32) for _ in range(count)]
