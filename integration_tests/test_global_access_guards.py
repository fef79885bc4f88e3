"""Element accesses of global buffers are guarded by the buffer's bounds, as TileLang's
safe-memory legalization guards them (`tl_ir.global_access_guards`): a grid of
``T.ceildiv(M, block)`` blocks storing ``C[bx * block + i]`` from a ``T.Parallel`` loop
wrote past the end of ``C`` (a heap overwrite on ``c`` and ``llvm``; TileLang's top-k
example at M = 40 crashed), a load outside read what lay there, and
``T.annotate_safe_value`` applied to tile copies only."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tl_jit.language as T
from integration_tests.interpreter_target import compile_for

TARGETS = ["c", "llvm", "interpreter"]


def _padded_blocks(m: int, block: int) -> Any:
    @T.prim_func
    def padded_blocks(
        A: T.Tensor((m,), "float32"), C: T.Tensor((m,), "float32"), S: T.Tensor((1,), "float32")
    ):
        with T.Kernel(T.ceildiv(m, block), threads=32) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] + 1.0
            for i in T.serial(block):
                # a load past the end reads 0, an atomic onto a place past the end is dropped
                T.atomic_add(S[0], A[bx * block + i + 1])

    return padded_blocks


@pytest.mark.parametrize("target", TARGETS)
def test_a_grid_rounded_up_to_the_block_neither_writes_nor_reads_past_the_end(
    target: str,
) -> None:
    kernel = compile_for(_padded_blocks(40, 16), target)
    a = np.arange(40, dtype=np.float32)
    backing = np.full(64, -7.0, dtype=np.float32)
    a_backing = np.full(64, 1000.0, dtype=np.float32)
    a_backing[:40] = a
    c = backing[:40]
    s = np.zeros(1, np.float32)
    kernel(a_backing[:40], c, s)
    np.testing.assert_array_equal(c, a + 1)
    np.testing.assert_array_equal(backing[40:], -7.0)
    assert s[0] == 32 * a[1:].sum()  # every one of the 32 threads runs the serial loop


def _shifted_rows(m: int, n: int, block: int, pad: float) -> Any:
    @T.prim_func
    def shifted_rows(A: T.Tensor((m, n), "float32"), B: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(n, block), T.ceildiv(m, block), threads=32) as (bx, by):
            A_shared = T.alloc_shared((block, block), "float32")
            T.annotate_safe_value({A: pad})
            for i, j in T.Parallel(block, block):
                A_shared[i, j] = A[by * block + i - 3, bx * block + j]
            for i, j in T.Parallel(block, block):
                B[by * block + i, bx * block + j] = A_shared[i, j]

    return shifted_rows


@pytest.mark.parametrize("target", TARGETS)
def test_loads_outside_read_the_annotated_safe_value(target: str) -> None:
    """TileLang's own ``annotate_safe_value`` test, at a size of two by two blocks: rows
    shifted down by 3 read the pad value above the first row."""
    kernel = compile_for(_shifted_rows(20, 24, 16, 10.0), target, out_idx=[1])
    a = np.random.default_rng(0).standard_normal((20, 24)).astype(np.float32)
    expected = np.full_like(a, 10.0)
    expected[3:] = a[:-3]
    np.testing.assert_array_equal(kernel(a), expected)


def _gather() -> Any:
    @T.prim_func
    def gather(
        A: T.Tensor((8,), "float32"), Idx: T.Tensor((6,), "int32"), B: T.Tensor((6,), "float32")
    ):
        with T.Kernel(1, threads=1):
            for i in T.serial(6):
                B[i] = A[Idx[i]] * 2.0
            for i in T.serial(6):
                A[Idx[i]] = -1.0

    return gather


@pytest.mark.parametrize("target", TARGETS)
def test_indices_read_from_memory_are_guarded(target: str) -> None:
    kernel = compile_for(_gather(), target)
    backing = np.full(16, -7.0, np.float32)
    a = backing[4:12]
    a[:] = np.arange(1, 9, dtype=np.float32)
    idx = np.array([0, 7, -1, 6, 8, 1 << 20], np.int32)
    b = np.zeros(6, np.float32)
    kernel(a, idx, b)
    np.testing.assert_array_equal(b, [2.0, 16.0, 0.0, 14.0, 0.0, 0.0])
    np.testing.assert_array_equal(a, [-1, 2, 3, 4, 5, 6, -1, -1])
    np.testing.assert_array_equal(backing[:4], -7.0)
    np.testing.assert_array_equal(backing[12:], -7.0)


def test_an_access_proved_inside_gets_no_guard() -> None:
    """The guard costs nothing where the analyzer proves the index inside: the loops'
    and block indices' ranges, and the ``if`` around an access, are known to it."""

    @T.prim_func
    def exact(A: T.Tensor((64,), "float32"), C: T.Tensor((64,), "float32"), n: T.int32):
        with T.Kernel(T.ceildiv(64, 16), threads=32) as bx:
            for i in T.Parallel(16):
                C[bx * 16 + i] = A[bx * 16 + i] * 2.0
            for i in T.serial(64):
                if i < n and i >= 0:
                    C[i] = A[i] + C[i]

    body = exact.body.script()
    assert "if_then_else" not in body
    assert body.count("if ") == 1


def _rows_by_name(m: int, block: int) -> Any:
    @T.prim_func
    def rows_by_name(A: T.Tensor((m, 8), "float32"), C: T.Tensor((m, 8), "float32")):
        with T.Kernel(T.ceildiv(m, block), threads=32) as bx:
            for i, j in T.Parallel(block, 8):
                row = bx * block + i  # a scalar name: a one-element local stored once
                C[row, j] = A[row, j] * 2.0

    return rows_by_name


def test_a_scalar_name_stored_once_is_known_to_the_guards() -> None:
    """``row = bx * block + i``: a grid that divides the shape gets no guard; one that
    rounds up gets the one bound it cannot prove, on the store only (the store's load is
    read inside that guard)."""
    exact = _rows_by_name(64, 16).body.script()
    assert "if " not in exact and "if_then_else" not in exact
    padded = _rows_by_name(60, 16).body.script()
    assert padded.count("if row < 60:") == 1
    assert "if_then_else" not in padded and "row >= 0" not in padded


@pytest.mark.parametrize("target", TARGETS)
def test_a_scalar_name_rounded_up_grid_writes_only_inside(target: str) -> None:
    kernel = compile_for(_rows_by_name(60, 16), target)
    a = np.arange(60 * 8, dtype=np.float32).reshape(60, 8)
    backing = np.full((64, 8), -7.0, dtype=np.float32)
    c = backing[:60]
    kernel(a, c)
    np.testing.assert_array_equal(c, a * 2)
    np.testing.assert_array_equal(backing[60:], -7.0)


def _name_read_from_written_memory() -> Any:
    @T.prim_func
    def name_read_from_written_memory(Idx: T.Tensor((2,), "int32"), C: T.Tensor((6,), "float32")):
        with T.Kernel(1, threads=1):
            row = Idx[0]  # the value before the write below
            Idx[0] = 1
            if Idx[0] >= 0 and Idx[0] < 6:  # says nothing about row
                C[row] = 1.0

    return name_read_from_written_memory


@pytest.mark.parametrize("target", TARGETS)
def test_a_scalar_name_of_written_memory_stays_guarded(target: str) -> None:
    """Substituting ``Idx[0]`` for ``row`` would read ``Idx`` after its write and prove
    the store inside; it stays guarded."""
    kernel = compile_for(_name_read_from_written_memory(), target)
    for first, expected in ((3, [-7, -7, -7, 1, -7, -7]), (7, [-7] * 6), (-1, [-7] * 6)):
        backing = np.full(12, -7.0, dtype=np.float32)
        c = backing[3:9]
        kernel(np.array([first, 0], np.int32), c)
        np.testing.assert_array_equal(c, expected)
        np.testing.assert_array_equal(backing[:3], -7.0)
        np.testing.assert_array_equal(backing[9:], -7.0)


def _scatter_at_offset() -> Any:
    @T.prim_func
    def scatter_at_offset(
        Offs: T.Tensor((2,), "int32"), Idx: T.Tensor((12,), "int32"), Out: T.Tensor((5,), "float32")
    ):
        with T.Kernel(1, threads=8) as bx:
            bos = Offs[bx]  # a run-time offset: the index read Idx[bos + i] is guarded
            for i in T.Parallel(8):
                T.atomic_add(Out[Idx[bos + i]], T.float32(i + 1))

    return scatter_at_offset


@pytest.mark.parametrize("target", TARGETS)
def test_an_atomic_onto_an_index_read_at_a_run_time_offset(target: str) -> None:
    """The atomic's address operand ``Out[Idx[bos + i]]`` has a guarded load in its
    index; taking the guard off the operand itself rebuilt the address call, which
    crashed the compiler (TileLang's sparse_mla_bwd does this)."""
    kernel = compile_for(_scatter_at_offset(), target)
    idx = np.array([2, 2, 0, 3, 3, 3, 1, 4, 0, 2, 4, 1], np.int32)
    for offset in (0, 6):  # 6: i >= 6 reads past Idx's end, so index 0 (the safe value)
        out = np.zeros(5, np.float32)
        kernel(np.array([offset, 0], np.int32), idx, out)
        expected = np.zeros(5, np.float32)
        for i in range(8):
            expected[idx[offset + i] if offset + i < 12 else 0] += i + 1
        np.testing.assert_array_equal(out, expected)
