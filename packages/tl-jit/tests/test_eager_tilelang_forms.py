"""Issue 20 item 7: forms TileLang's own eager examples write, each as small as the
construct allows (shapes taken from TileLang's convolution, online softmax and
Hadamard examples) and flash attention backward's ``T.Layout``. Every kernel builds
for ``c`` (a fraction of a second each). No ``from __future__ import annotations``:
the classic kernels' parameter annotations must be objects, not strings."""

import math
from pathlib import Path

import numpy as np
import pytest

import tl_jit
import tl_jit.language as T


def _no_hopper() -> bool | None:
    """TileLang's convolution example's ``check_hopper()`` without a GPU."""
    return None


def test_a_size_constant_used_only_under_an_alias_is_bound(cache_dir: Path) -> None:
    # The convolution example: `KH, KW = K, K`, and only KH/KW appear in a shape.
    @tl_jit.jit(target="c")
    def corner(data, kernel):
        N, K = T.const("N, K")
        KH, KW = K, K
        data: T.Tensor((N,), T.float32)
        kernel: T.Tensor((KH, KW), T.float32)
        out = T.empty((N,), T.float32)
        with T.Kernel(1, threads=1) as _bx:
            for i in T.serial(N):
                out[i] = data[i] + kernel[KH - 1, KW - 1]
        return out

    data = np.arange(4, dtype=np.float32)
    kernel = np.arange(9, dtype=np.float32).reshape(3, 3)
    np.testing.assert_array_equal(corner(data, kernel), data + 8)
    # The alias binds K from the first axis; the second axis must agree with it.
    with pytest.raises(ValueError, match="kernel"):
        corner(data, np.zeros((3, 4), np.float32))


def test_dtype_objects_strings_none_and_dicts_assigned_in_the_body_stay_python_values(
    cache_dir: Path,
) -> None:
    # The online softmax example assigns `accum_dtype = T.float32` after its declarations.
    @tl_jit.jit(target="c")
    def scaled(X, dtype: T.dtype = T.float32):
        M = T.const("M")
        X: T.Tensor([M], dtype)
        Y = T.empty([M], dtype)
        accum_dtype = T.float32
        name = "unused"  # noqa: F841 - a string bound in the body
        nothing = None  # noqa: F841 - None bound in the body
        factors = {"x": 3}
        with T.Kernel(1, threads=1) as _bx:
            acc = T.alloc_fragment([M], accum_dtype)
            for i in T.serial(M):
                acc[i] = X[i] * factors["x"]
                Y[i] = acc[i]
        return Y

    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(scaled(x), 3 * x)


def test_python_lists_and_dicts_subscripted_in_the_body_are_compile_time_values(
    cache_dir: Path,
) -> None:
    # The Hadamard example's `threads = [...][logN]` and `{T.float32: 4, ...}[dtype]`
    # after its declarations, then `math.log2` of values derived from them.
    @tl_jit.jit(target="c")
    def hadamard_like(A, n: int = 8, dtype: T.dtype = T.float32):
        b = T.const("b")
        A: T.Tensor((b, n), dtype)
        B = T.empty((b, n), dtype)
        elem_size = {T.float32: 4, T.float16: 2, T.bfloat16: 2}[dtype]
        logN = int(math.log2(n))
        threads = [0, 1, 1, 2, 2][logN]
        thread_elem = n // threads
        thread_round = int(math.log2(thread_elem))
        with T.Kernel(b, threads=1) as bx:
            for i in T.serial(n):
                B[bx, i] = A[bx, i] * elem_size + thread_round
        return B

    a = np.ones((2, 8), np.float32)
    np.testing.assert_array_equal(hadamard_like(a), a * 4 + 2)


def test_an_if_on_none_picks_the_else_branch_while_parsing(cache_dir: Path) -> None:
    # The convolution autotune example: `is_hopper = check_hopper()` is None off Hopper.
    @tl_jit.jit(target="c")
    def conv_tail(A):
        M = T.const("M")
        is_hopper = _no_hopper()
        A: T.Tensor([M], T.float32)
        B = T.empty([M], T.float32)
        with T.Kernel(1, threads=1) as _bx:
            if is_hopper:
                for i in T.serial(M):
                    B[i] = A[i]
            else:
                for i in T.serial(M):
                    B[i] = A[i] + 1
        return B

    a = np.ones(4, np.float32)
    np.testing.assert_array_equal(conv_tail(a), a + 1)


def make_dq_layout(dQ):
    # Flash attention backward's layout of its dQ accumulator (TileLang's example).
    return T.Layout(dQ.shape, lambda b, l, h, d: [b, l // 8, h, d // 8, (d % 2), 4 * (l % 8) + (d % 8) // 2])  # fmt: skip # noqa: E741


def test_a_t_layout_annotated_on_the_writer_and_the_reader_keeps_the_values(
    cache_dir: Path,
) -> None:
    # The shape of flash attention backward: one kernel accumulates into dQ with
    # atomic adds under the layout, the postprocess kernel copies dQ out under it.
    shape = [1, 16, 1, 16]

    @tl_jit.jit(target="c")
    def accumulate():
        @T.prim_func
        def bwd(G: T.Tensor(shape, "float32"), dQ: T.Tensor(shape, "float32")):
            with T.Kernel(2, threads=1) as bx:
                T.annotate_layout({dQ: make_dq_layout(dQ)})
                for i, j in T.Parallel(16, 16):
                    T.atomic_add(dQ[0, i, 0, j], G[0, i, 0, j] * (bx + 1))

        return bwd

    @tl_jit.jit(target="c", out_idx=[1])
    def postprocess():
        @T.prim_func
        def post(dQ: T.Tensor(shape, "float32"), dQ_out: T.Tensor(shape, "float32")):
            with T.Kernel(1, threads=1) as _bx:
                T.annotate_layout({dQ: make_dq_layout(dQ)})
                T.copy(dQ[0, :, :, :], dQ_out[0, :, :, :])

        return post

    g = np.arange(256, dtype=np.float32).reshape(shape)
    dq = np.zeros(shape, np.float32)
    accumulate()(g, dq)
    np.testing.assert_array_equal(postprocess()(dq), 3 * g)
