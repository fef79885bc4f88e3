"""Legal TileLang programs that the CPU targets rejected with raw TVM or gcc errors.

Each compiles on ``c`` and ``llvm`` and computes what numpy (and ``ml_dtypes``) say:

* an fp8 store of a constant (TileLang issue 1601): gcc refused the address of a
  constant TVM's float8 conversion printed, and LLVM a vector ``if_then_else``
  once the store was vectorized;
* a local tile read at an index held in a local variable (TileLang issue 1678):
  TVM's buffer compaction named the variable's buffer outside its definition, or,
  for an index read from a tensor, silently folded the tile to one element;
* a tile op over a region whose extent folds to 0 (TileLang issue 1008): it does
  nothing, where lowering raised "expected positive ints".
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tl_ir.language as T
import tl_jit

ml_dtypes = pytest.importorskip("ml_dtypes")

TARGETS = ("c", "llvm")
FP8 = ("float8_e4m3fn", "float8_e5m2")


# --- TileLang issue 1601: fp8 stores of constants and lane-uniform values ---------------


def _fp8_fill(fmt: str, vectorized: bool, value: float) -> Any:
    @T.prim_func
    def fill(A: T.Tensor((8,), fmt)):
        with T.Kernel(1, threads=32):
            if vectorized:
                for i in T.vectorized(8):
                    A[i] = value
            else:
                for i in T.serial(8):
                    A[i] = value

    return fill


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fmt", FP8)
@pytest.mark.parametrize("vectorized", [True, False], ids=["vectorized", "serial"])
@pytest.mark.parametrize("value", [0, 0.3, -300])
def test_an_fp8_store_of_a_constant_stores_its_rounded_code(
    target: str, fmt: str, vectorized: bool, value: float
) -> None:
    # 0: the issue; 0.3 and -300 round (to nearest, ties to even) to what the format holds.
    kernel = tl_jit.compile(_fp8_fill(fmt, vectorized, value), target=target)
    a = np.ones(8, np.float32).astype(getattr(ml_dtypes, fmt))
    kernel(a)
    expected = np.full(8, value, np.float32).astype(getattr(ml_dtypes, fmt))
    np.testing.assert_array_equal(a.view(np.uint8), expected.view(np.uint8))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fmt", FP8)
def test_a_vector_loop_storing_one_fp8_value_to_every_lane(target: str, fmt: str) -> None:
    # A cast scalar, an element of another tensor and a typed constant: each the same for
    # every lane of the vector loop (TVM broadcast it as fp8, which LLVM refused).
    @T.prim_func
    def uniform(
        A: T.Tensor((8,), fmt),
        B: T.Tensor((8,), fmt),
        C: T.Tensor((8,), fmt),
        D: T.Tensor((8,), fmt),
        s: T.float32,
    ):
        with T.Kernel(1, threads=32):
            for i in T.vectorized(8):
                A[i] = T.Cast(fmt, s)
                B[i] = D[3]
                C[i] = T.Cast(fmt, T.float32(-2.75))

    kernel = tl_jit.compile(uniform, target=target)
    narrow = getattr(ml_dtypes, fmt)
    a, b, c = (np.zeros(8, narrow) for _ in range(3))
    d = np.arange(8, dtype=np.float32).astype(narrow)
    kernel(a, b, c, d, 0.3)
    assert a.view(np.uint8).tolist() == [np.float32(0.3).astype(narrow).view(np.uint8)] * 8
    np.testing.assert_array_equal(b.view(np.uint8), np.full(8, d.view(np.uint8)[3]))
    # -2.75: exact in e4m3fn, a tie that rounds to even (-3) in e5m2.
    expected_c = np.full(8, -2.75, np.float32).astype(narrow)
    np.testing.assert_array_equal(c.view(np.uint8), expected_c.view(np.uint8))


# --- TileLang issue 1678: local tiles indexed by values read from memory ---------------


def _issue_1678() -> Any:
    # The issue's kernel, as reported.
    @T.prim_func
    def qwq_kernel():
        with T.Kernel(4096, 1, threads=1) as (_pid_y, _pid_x):
            i = T.alloc_var("int32")
            i = 1  # noqa: F841 - the issue's reassigned local
            tmp_row = T.alloc_local((4,), "float32")
            amax_local = T.alloc_var("float32")
            j = 0
            amax_local = T.max(amax_local, tmp_row[j])

    return qwq_kernel


@pytest.mark.parametrize("target", TARGETS)
def test_the_issue_1678_kernel_builds(target: str) -> None:
    tl_jit.compile(_issue_1678(), target=target)


def _unwritten_read(write_first: bool) -> Any:
    @T.prim_func
    def unwritten(out: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=1) as _:
            tmp_row = T.alloc_local((4,), "float32")
            if write_first:
                for q in T.serial(4):
                    tmp_row[q] = q + 1.0
            m = T.alloc_var("float32")
            m = -1.0
            j = 0
            m = T.max(m, tmp_row[j])
            out[0] = m

    return unwritten


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("write_first", [False, True], ids=["never-written", "written"])
def test_a_local_tile_read_at_a_local_index(target: str, write_first: bool) -> None:
    # A tile the kernel never writes reads as 0 on the CPU (its values are unspecified).
    kernel = tl_jit.compile(_unwritten_read(write_first), target=target, out_idx=[0])
    assert kernel().tolist() == [1.0 if write_first else 0.0]


def _indexed_through_memory(index_in_tensor: bool) -> Any:
    @T.prim_func
    def indexed(out: T.Tensor((1,), "float32"), index: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=1) as _:
            tmp = T.alloc_local((4,), "float32")
            s = T.alloc_var("float32")
            j = T.alloc_var("int32")
            s = 0.0
            for q in T.serial(4):
                if index_in_tensor:
                    index[0] = q
                    tmp[index[0]] = q + 1.0
                else:
                    j = q
                    tmp[j] = q + 1.0
            for q in T.serial(4):
                if index_in_tensor:
                    index[0] = q
                    s += tmp[index[0]]
                else:
                    j = q
                    s += tmp[j]
            out[0] = s

    return indexed


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("index_in_tensor", [False, True], ids=["local-index", "tensor-index"])
def test_a_tile_indexed_only_by_loaded_values_keeps_every_element(
    target: str, index_in_tensor: bool
) -> None:
    # TVM's compaction took tmp[j] for one element: the build failed on the local
    # index, and with the index in a tensor every write landed on one slot (16, not 10).
    kernel = tl_jit.compile(_indexed_through_memory(index_in_tensor), target=target)
    out = np.zeros(1, np.float32)
    kernel(out, np.zeros(1, np.int32))
    assert out.tolist() == [10.0]


# --- TileLang issue 1008: tile ops over empty regions -----------------------------------


def _issue_1008() -> Any:
    n = T.symbolic("num_tokens")

    @T.prim_func
    def main(x: T.Tensor((n,), "int64")):
        with T.Kernel(n, threads=128) as _:
            a, b = T.alloc_var(T.int), T.alloc_var(T.int)
            T.fill(x[a:b], 0)

    return main


@pytest.mark.parametrize("target", TARGETS)
def test_a_fill_of_an_empty_region_writes_nothing(target: str) -> None:
    # a == b == 0 at compile time: the region x[0:0] is empty.
    kernel = tl_jit.compile(_issue_1008(), target=target)
    x = np.ones(256, np.int64)
    kernel(x)
    assert x.tolist() == [1] * 256


def _empty_ops() -> Any:
    @T.prim_func
    def empty(X: T.Tensor((16,), "float32"), Y: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32):
            S = T.alloc_shared((16,), "float32")
            T.fill(S, 7.0)
            T.copy(X[4:4], S[4:4])
            T.copy(X[4:4], Y[4:4])
            T.atomic_add(Y[2:2], X[2:2])
            T.copy(S[0:8], Y[8:16])

    return empty


@pytest.mark.parametrize("target", TARGETS)
def test_copies_and_atomics_over_empty_regions_do_nothing(target: str) -> None:
    kernel = tl_jit.compile(_empty_ops(), target=target)
    x = np.arange(16, dtype=np.float32)
    y = np.full(16, -1.0, np.float32)
    kernel(x, y)
    assert y.tolist() == [-1.0] * 8 + [7.0] * 8


def _empty_reductions() -> Any:
    @T.prim_func
    def empty(
        X: T.Tensor((4, 8), "float32"),
        sums: T.Tensor((4,), "float32"),
        maxima: T.Tensor((4,), "float32"),
        kept: T.Tensor((4,), "float32"),
        C: T.Tensor((16, 16), "float32"),
    ):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((4, 8), "float32")
            D = T.alloc_fragment((4,), "float32")
            T.copy(X, S)
            T.fill(D, 5.0)
            T.reduce_sum(S[0:4, 2:2], D, dim=1, clear=False)
            T.copy(D, kept)
            T.reduce_sum(S[0:4, 2:2], D, dim=1)
            T.copy(D, sums)
            T.reduce_max(S[0:4, 2:2], D, dim=1)
            T.copy(D, maxima)
            As = T.alloc_shared((16, 16), "float32")
            Cf = T.alloc_fragment((16, 16), "float32")
            T.fill(As, 1.0)
            T.fill(Cf, 3.0)
            T.gemm(As[0:16, 0:0], As[0:0, 0:16], Cf, clear_accum=True)
            T.copy(Cf, C)

    return empty


@pytest.mark.parametrize("target", TARGETS)
def test_reductions_over_an_empty_dimension_give_the_identity(target: str) -> None:
    # Reducing no element: a clearing reduce gives the identity (0, -inf), a folding one
    # keeps dst; a gemm with K == 0 and clear_accum gives C = 0.
    kernel = tl_jit.compile(_empty_reductions(), target=target, out_idx=[1, 2, 3, 4])
    sums, maxima, kept, c = kernel(np.ones((4, 8), np.float32))
    assert sums.tolist() == [0.0] * 4
    assert maxima.tolist() == [-np.inf] * 4
    assert kept.tolist() == [5.0] * 4
    assert c.tolist() == np.zeros((16, 16)).tolist()


def _negative_fill() -> Any:
    @T.prim_func
    def negative(Y: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32):
            T.fill(Y[5:3], 1.0)

    return negative


@pytest.mark.parametrize("target", TARGETS)
def test_a_negative_extent_is_still_an_error(target: str) -> None:
    with pytest.raises(ValueError, match="negative extent -2"):
        tl_jit.compile(_negative_fill(), target=target)
