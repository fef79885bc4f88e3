"""TileLang constructs that were refused or died with internal errors, on ``c``, ``llvm``
and the reference interpreter (their CUDA lowering is checked in
packages/tl-codegen-cuda/tests/test_porting_gaps_emulated.py):

* ``T.Kernel(threads=n)`` / ``T.Kernel()`` with no grid extent: one block;
* tensors with a 0-size dim (TileLang issue 1697: a K = 0 GEMM leaves C zero);
* ``T.device_assert(cond, msg)`` (issue 2307): a failing check raises
  ``AssertionError`` from the call, naming the kernel, the message and the line;
* ``T.sblock`` scopes with ``T.reads()``/``T.writes()`` around ``T.annotate_safe_value``:
  the innermost annotation is in force, and ends with its scope;
* a slice used as a value (``b = A[0, 0:4]; A[0, 4:8] = b``, TileLang's
  test_let_vectorize_load), also in a kernel written as ``T.thread_binding`` loops.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tl_jit
import tl_jit.language as T
from integration_tests.interpreter_target import compile_for
from tl_ir.errors import KernelTypeError

TARGETS = ["c", "llvm", "interpreter"]


# ------------------------------------------------------------------ T.Kernel without a grid


def _no_grid_max(spelled_threads: bool) -> Any:
    @T.prim_func
    def main(A: T.Tensor((16,), T.float32), B: T.Tensor((1,), T.float32)):
        if spelled_threads:
            with T.Kernel(threads=32):
                tmp = T.alloc_fragment((16,), T.float32)
                m = T.alloc_fragment((1,), T.float32)
                T.copy(A, tmp)
                T.reduce_max(tmp, m, dim=0)
                T.copy(m, B)
        else:
            with T.Kernel() as bound:
                B[0] = A[0] + T.float32(len(bound))

    return main


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("spelled_threads", [True, False])
def test_kernel_without_grid_extents_is_one_block(target: str, spelled_threads: bool) -> None:
    kernel = compile_for(_no_grid_max(spelled_threads), target)
    a = np.random.default_rng(0).standard_normal(16).astype(np.float32)
    b = np.zeros(1, np.float32)
    kernel(a, b)
    assert b[0] == (a.max() if spelled_threads else a[0])  # `as` binds no block index


def test_kernel_with_four_grid_extents_is_refused() -> None:
    with pytest.raises(KernelTypeError, match="expected 0 to 3 grid extents, got 4"):
        T.Kernel(1, 1, 1, 1)


# ------------------------------------------------------------------ 0-size dims


def _gemm_k0(K: int) -> Any:
    M = N = 64

    @T.prim_func
    def main(
        A: T.Tensor((M, K), T.float16),
        B: T.Tensor((K, N), T.float16),
        C: T.Tensor((M, N), T.float16),
    ):
        with T.Kernel(1, 1, threads=128) as (_bx, _by):
            A_s = T.alloc_shared((64, 32), T.float16)
            B_s = T.alloc_shared((32, 64), T.float16)
            C_l = T.alloc_fragment((64, 64), T.float32)
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, 32)):
                T.copy(A[0, k * 32], A_s)
                T.copy(B[k * 32, 0], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[0, 0])

    return main


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_zero_size_dim_gemm_leaves_c_zero(target: str) -> None:
    # TileLang issue 1697: a Tensor with a 0 dim compiles; loops over 0 do nothing.
    kernel = compile_for(_gemm_k0(0), target)
    a, b = np.zeros((64, 0), np.float16), np.zeros((0, 64), np.float16)
    c = np.ones((64, 64), np.float16)
    kernel(a, b, c)
    assert not c.any()


def _zero_length_copy() -> Any:
    @T.prim_func
    def main(A: T.Tensor((0,), T.float32), B: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=8):
            for i in T.serial(0):
                B[i] = A[i]
            for i in T.Parallel(8):
                B[i] = B[i] + 1.0

    return main


@pytest.mark.parametrize("target", TARGETS)
def test_zero_size_tensor_parameter_runs(target: str) -> None:
    kernel = compile_for(_zero_length_copy(), target)
    b = np.zeros(8, np.float32)
    kernel(np.zeros(0, np.float32), b)
    np.testing.assert_array_equal(b, np.ones(8, np.float32))


def test_negative_tensor_dims_stay_refused() -> None:
    with pytest.raises(KernelTypeError, match="expected non-negative dims, got -1"):
        T.Tensor((-1, 4), "float32")


# ------------------------------------------------------------------ T.device_assert


def _asserting(kind: str) -> Any:
    @T.prim_func
    def main(score: T.Tensor((64,), T.float32), out: T.Tensor((64,), T.float32)):
        with T.Kernel(4, threads=16) as bx:
            if kind == "parallel":
                for i in T.Parallel(16):
                    T.device_assert(T.isfinite(score[bx * 16 + i]), msg="score must be finite")
                    out[bx * 16 + i] = score[bx * 16 + i] * 2.0
            else:
                tx = T.get_thread_binding()
                T.device_assert(score[bx * 16 + tx] < 100.0)
                out[bx * 16 + tx] = score[bx * 16 + tx]

    return main


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", ["parallel", "thread"])
def test_device_assert_raises_from_the_call_when_it_fails(target: str, kind: str) -> None:
    kernel = compile_for(_asserting(kind), target)
    score, out = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    kernel(score, out)  # passes: no error
    expected = score * 2 if kind == "parallel" else score
    np.testing.assert_array_equal(out, expected)
    score[37] = np.inf if kind == "parallel" else 1000.0
    said = "score must be finite" if kind == "parallel" else "the condition is false"
    with pytest.raises(AssertionError, match=f"T.device_assert failed.*: {said} at ") as info:
        kernel(score, out)
    assert "test_porting_gaps.py:" in str(info.value)
    assert "T.device_assert(" in str(info.value)  # the source line
    if target != "interpreter":
        assert "in kernel 'main'" in str(info.value)
    score[37] = 1.0
    kernel(score, out)  # the next call starts clean


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_device_assert_raises_assertion_error_through_the_cython_launcher(target: str) -> None:
    kernel = tl_jit.compile(_asserting("parallel"), target=target, execution_backend="cython")
    assert kernel.manifest.execution_backend == "cython"
    score, out = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    kernel(score, out)
    score[3] = np.nan
    with pytest.raises(AssertionError, match="score must be finite"):
        kernel(score, out)


def _quoted_message() -> Any:
    @T.prim_func
    def main(A: T.Tensor((8,), T.int32)):
        with T.Kernel(threads=8):
            for i in T.Parallel(8):
                T.device_assert(A[i] != 3, msg='A "quoted" \\ 100%\nnext')

    return main


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_device_assert_message_keeps_quotes_and_percent(target: str) -> None:
    kernel = compile_for(_quoted_message(), target)
    a = np.zeros(8, np.int32)
    kernel(a)
    a[5] = 3
    with pytest.raises(AssertionError) as info:
        kernel(a)
    assert 'A "quoted" \\ 100%\nnext at ' in str(info.value)


def test_device_assert_checks_its_arguments() -> None:
    with pytest.raises(KernelTypeError, match="msg to be a str"):

        @T.prim_func
        def bad_msg(A: T.Tensor((4,), T.int32)):
            with T.Kernel(1, threads=4):
                T.device_assert(A[0] > 0, msg=3)

    with pytest.raises(KernelTypeError, match="always fails: never"):

        @T.prim_func
        def constant_false(A: T.Tensor((4,), T.int32)):
            with T.Kernel(1, threads=4):
                T.device_assert(False, "never")


# ------------------------------------------------------------------ T.sblock scopes


def _scoped_safe_values() -> Any:
    M = N = 60
    BM = BN = 64

    @T.prim_func
    def main(
        A: T.Tensor((M, N), "int32"),
        Out: T.Tensor((BM, BN), "int32"),
        Inner: T.Tensor((BM, BN), "int32"),
    ):
        with T.Kernel(1, threads=128):
            inner = T.alloc_shared((BM, BN), "int32")
            outer = T.alloc_shared((BM, BN), "int32")
            with T.sblock("outer"):
                T.reads()
                T.writes()
                T.annotate_safe_value({A: -1})
                with T.sblock("inner"):
                    T.reads(A[0:BM, 0:BN])
                    T.writes(inner)
                    T.annotate_safe_value({A: -99})
                    T.copy(A[0:BM, 0:BN], inner)
                T.copy(A[0:BM, 0:BN], outer)
                for i, j in T.Parallel(BM, BN):
                    Out[i, j] = outer[i, j]
                    Inner[i, j] = inner[i, j]

    return main


@pytest.mark.parametrize("target", TARGETS)
def test_sblock_scopes_the_safe_value(target: str) -> None:
    kernel = compile_for(_scoped_safe_values(), target)
    a = np.arange(60 * 60, dtype=np.int32).reshape(60, 60)
    out, inner = np.zeros((64, 64), np.int32), np.zeros((64, 64), np.int32)
    kernel(a, out, inner)
    np.testing.assert_array_equal(out[:60, :60], a)
    np.testing.assert_array_equal(inner[:60, :60], a)
    assert set(out[60:].ravel()) | set(out[:, 60:].ravel()) == {-1}
    assert set(inner[60:].ravel()) | set(inner[:, 60:].ravel()) == {-99}


def test_reads_in_an_sblock_must_name_regions() -> None:
    with pytest.raises(KernelTypeError, match=r"T.reads: expected buffers or regions"):

        @T.prim_func
        def main(A: T.Tensor((4,), T.int32)):
            with T.Kernel(1, threads=4), T.sblock("b"):
                T.reads(3)
                A[0] = 1


# ------------------------------------------------------------------ slices as values


def _slice_values(kind: str) -> Any:
    @T.prim_func
    def main(A: T.Tensor((16, 16), T.float32)):
        if kind == "binding":
            for _bx in T.thread_binding(1, thread="blockIdx.x"):
                for _tx in T.thread_binding(128, thread="threadIdx.x"):
                    b = A[0, 0:4]
                    A[0, 4:8] = b
        else:
            with T.Kernel(1, threads=4):
                b = A[0, 0:4]
                A[0, 4:8] = b
                A[1, 12:16] = A[1, 8:12]

    return main


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", ["binding", "kernel"])
def test_slice_value_stores_its_elements(target: str, kind: str) -> None:
    # TileLang test_tilelang_language_let.py::test_let_vectorize_load.
    kernel = compile_for(_slice_values(kind), target)
    a = np.arange(256, dtype=np.float32).reshape(16, 16)
    expected = a.copy()
    expected[0, 4:8] = expected[0, 0:4]
    if kind == "kernel":
        expected[1, 12:16] = a[1, 8:12]
    kernel(a)
    np.testing.assert_array_equal(a, expected)


def test_slice_value_lengths_must_match() -> None:
    with pytest.raises(KernelTypeError, match=r"a slice of 4 element.*target slice has 3"):

        @T.prim_func
        def main(A: T.Tensor((16,), T.float32)):
            with T.Kernel(1, threads=1):
                b = A[0:4]
                A[4:7] = b


def test_two_dimensional_slice_value_is_refused() -> None:
    with pytest.raises(KernelTypeError, match="one dim of constant length"):

        @T.prim_func
        def main(A: T.Tensor((16, 16), T.float32)):
            with T.Kernel(1, threads=1):
                b = A[0:2, 0:4]
                A[4, 0:8] = b


def test_unsupported_dtype_in_a_string_annotation_is_named() -> None:
    """Under ``from __future__ import annotations`` (this module) a parameter's type is a
    string; an unsupported dtype in it is reported as such, not as TVM's
    "Unexpected type for TIR Arg"."""
    from tl_ir import UnsupportedDtypeError

    def build(M: int) -> Any:
        @T.prim_func
        def main(A: T.Tensor((M,), T.int4), B: T.Tensor((M,), T.int32)):
            with T.Kernel(1, threads=32):
                for i in T.Parallel(M):
                    B[i] = A[i]

        return main

    with pytest.raises(UnsupportedDtypeError, match="'int4' is a TileLang dtype"):
        build(16)


def test_mma_swizzle_layout_is_a_hint() -> None:
    """TileLang's hadamard example annotates ``make_mma_swizzle_layout(shared)``: a
    swizzle where rows are whole 64-byte groups, the linear layout otherwise."""
    from tl_jit.layout import make_mma_swizzle_layout

    assert make_mma_swizzle_layout is T.make_mma_swizzle_layout

    def build(N: int, dtype: str, smooth: bool) -> Any:
        @T.prim_func
        def main(A: T.Tensor((16, N), dtype), B: T.Tensor((16, N), dtype)):
            with T.Kernel(1, threads=32):
                s = T.alloc_shared((16, N), dtype)
                T.annotate_layout({s: T.make_mma_swizzle_layout(s, is_smooth=smooth)})
                T.copy(A, s)
                T.copy(s, B)

        return main

    cases = [(32, "float16", False, "swizzled"), (24, "float16", False, "linear")]
    cases += [(32, "float16", True, "linear"), (16, "float32", False, "swizzled")]
    for N, dtype, smooth, kind in cases:
        func = build(N, dtype, smooth)
        assert dict(func.attrs["tl.shared_layouts"]) == {"s": kind}
        kernel = tl_jit.compile(func, out_idx=[1], target="c")
        a = np.arange(16 * N).reshape(16, N).astype(dtype)
        np.testing.assert_array_equal(kernel(a), a)


def _half_accumulating_gemm(dtype: str, transpose_b: bool) -> Any:
    b_shape = (16, 24) if transpose_b else (24, 16)

    @T.prim_func
    def half_gemm(
        A: T.Tensor((8, 24), dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((8, 16), dtype)
    ):
        with T.Kernel(1, threads=32):
            a_tile = T.alloc_shared((8, 24), dtype)
            b_tile = T.alloc_shared(b_shape, dtype)
            acc = T.alloc_fragment((8, 16), dtype)
            T.copy(A, a_tile)
            T.copy(B, b_tile)
            T.clear(acc)
            T.gemm(a_tile, b_tile, acc, transpose_B=transpose_b)
            T.copy(acc, C)

    return half_gemm


@pytest.mark.parametrize("target", ["c", "llvm", "interpreter"])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_a_gemm_accumulating_in_float16(target: str, transpose_b: bool) -> None:
    """TileLang's fine-grained dequantize example runs ``T.gemm`` into a float16
    fragment; the CPU micro-kernel has no fp16 accumulator, so the CPU targets ran
    none (a ValueError from cpu-lower-tile-ops). The sum runs in float16, k ascending;
    where each product is rounded is the target's (llvm fuses ``c + a * b`` into one
    rounding, c rounds the product first, the interpreter's gemm sums in float32), so
    the check is against the float32 product within float16 accumulation's error."""
    from integration_tests.interpreter_target import compile_for

    kernel = compile_for(_half_accumulating_gemm("float16", transpose_b), target)
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (8, 24)).astype(np.float16)
    b = rng.uniform(-1, 1, (16, 24) if transpose_b else (24, 16)).astype(np.float16)
    c = np.zeros((8, 16), np.float16)
    kernel(a, b, c)
    bk = b.T if transpose_b else b
    expected = a.astype(np.float32) @ bk.astype(np.float32)
    np.testing.assert_allclose(c.astype(np.float32), expected, atol=0.05)
    assert np.abs(c.astype(np.float32) - expected).mean() < 0.01


def test_ieee_math_takes_the_rounding_mode_after_its_operands() -> None:
    # TileLang's test_math_ieee_math passes the mode positionally; it was taken for an
    # extra operand (an internal error). An unknown mode is a ValueError, as in TileLang.
    @T.prim_func
    def ieee(
        A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32"), C: T.Tensor((3, 4), "float32")
    ):
        with T.Kernel(1, threads=4):
            for i in T.Parallel(4):
                C[0, i] = T.ieee_add(A[i], B[i], "rn")
                C[1, i] = T.ieee_fmaf(A[i], B[i], A[i], "rn")
                C[2, i] = T.ieee_fsqrt(A[i], rounding_mode="rn")

    a = np.array([1.0, 2.0, 4.0, 9.0], np.float32)
    b = np.array([0.5, 0.25, 3.0, -1.0], np.float32)
    c = np.zeros((3, 4), np.float32)
    tl_jit.compile(ieee, target="c")(a, b, c)
    np.testing.assert_allclose(c, [a + b, a * b + a, np.sqrt(a)], rtol=1e-6)
    with pytest.raises(ValueError, match="invalid rounding mode 'up'"):
        T.ieee_add(1.0, 2.0, "up")
    with pytest.raises(NotImplementedError, match="'rz'"):
        T.ieee_mul(1.0, 2.0, "rz")
    with pytest.raises(KernelTypeError, match="takes 2 operand"):
        T.ieee_sub(1.0, 2.0, 3.0, "rn")


def test_tensor_subscript_with_a_bare_dim_is_one_dim() -> None:
    # TileLang's int64 test writes T.Tensor[n, dtype]; it was read as the shape (n, dtype).
    one = T.Tensor[16, T.float32]
    assert [int(d) for d in one.ty.shape] == [16] and str(one.ty.dtype) == "float32"
    assert [int(d) for d in T.Tensor[16, "int8"].ty.shape] == [16]
    two = T.Tensor[4, 8]  # two dims, the default dtype
    assert [int(d) for d in two.ty.shape] == [4, 8] and str(two.ty.dtype) == "float32"


def test_lowered_sources_have_tilelangs_kernel_source() -> None:
    # TileLang's CPU tests and issue 2307 read tilelang.lower(func).kernel_source.
    @T.prim_func
    def one(A: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1):
            A[0] = 1.0

    sources = tl_jit.lower(one, target="c")
    assert sources.kernel_source == next(iter(sources.files.values()))
    assert "A" in sources.kernel_source
