"""More TileLang constructs that were refused or ended in TVM's internal errors, on
``c``, ``llvm`` and the reference interpreter (the first group:
integration_tests/test_porting_gaps.py):

* ``T.let(v, value)`` binding a variable made by ``v = T.int32()``;
* ``T.__exp`` & co. refusing an integer operand at the call (a ``TypeError``);
* ``T.pdl_trigger``/``T.pdl_sync`` as no-ops that keep a program's kernels in order;
* the lazy ``@T.prim_func`` (the eager style under ``@T.prim_func``) and the refusal of
  ``T.ptr`` parameters in a classic kernel;
* ``T.gemm(..., clear_accum=<run-time condition>)``.
"""

from __future__ import annotations

import numpy as np
import pytest

import tl_jit.language as T
from integration_tests.interpreter_target import compile_for
from tl_ir.errors import KernelSyntaxError, KernelTypeError

TARGETS = ["c", "llvm", "interpreter"]


# ------------------------------------------------------------------ T.let(var, value)


@pytest.mark.parametrize("target", TARGETS)
def test_let_binds_a_declared_variable_for_the_rest_of_the_block(target: str) -> None:
    # TileLang's test_tilelang_language_alias: ``off = T.int32(); T.let(off, ko * 4)``
    # ("'LetAnnotation' object is not callable" before); the annotation form still binds.
    @T.prim_func
    def offsets(A: T.Tensor((8,), T.float32), B: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=1):
            for ko in T.serial(2):
                off = T.int32()
                T.let(off, ko * 4)
                for i in T.serial(4):
                    twice: T.let = A[off + i] * 2.0
                    B[off + i] = T.let(off, off + 0, twice + 0.0 * off)

    a = np.arange(8, dtype=np.float32)
    b = np.zeros(8, np.float32)
    compile_for(offsets, target)(a, b)
    np.testing.assert_array_equal(b, 2 * a)


def test_let_names_what_it_expects() -> None:
    with pytest.raises(KernelTypeError, match="expected v to be a variable made by"):

        @T.prim_func
        def bad(A: T.Tensor((8,), T.float32)):
            with T.Kernel(1, threads=1):
                T.let(3, 4)
                A[0] = 1.0


@pytest.mark.parametrize("name", ["__exp", "__log", "__cos"])
def test_fast_math_names_refuse_an_integer_operand_at_the_call(name: str) -> None:
    # TileLang's fastmath test expects TypeError; TVM failed inside its code generator.
    function = getattr(T, name)
    with pytest.raises(TypeError, match=f"T.{name}: expected a floating-point operand"):

        @T.prim_func
        def integer_exp(A: T.Tensor((4,), T.int32), B: T.Tensor((4,), T.float32)):
            with T.Kernel(1, threads=1):
                for i in T.serial(4):
                    B[i] = function(A[i])


# ------------------------------------------------------------------ T.pdl_trigger / T.pdl_sync


@pytest.mark.parametrize("target", TARGETS)
def test_programmatic_dependent_launch_keeps_the_kernels_in_order(target: str) -> None:
    # TileLang's test_cython_pdl: the second kernel reads what the first wrote (refused as
    # "Hopper-only" before; every target runs a program's kernels one after the other).
    @T.prim_func
    def two_kernels(
        A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float32), C: T.Tensor((64,), T.float32)
    ):
        with T.Kernel(1, threads=64) as _:
            for i in T.Parallel(64):
                B[i] = A[i] + 1.0
            T.pdl_trigger()
        with T.Kernel(1, threads=64) as _:
            T.pdl_sync()
            for i in T.Parallel(64):
                C[i] = B[i] * 2.0

    a = np.arange(64, dtype=np.float32)
    b = np.zeros(64, np.float32)
    c = np.zeros(64, np.float32)
    compile_for(two_kernels, target)(a, b, c)
    np.testing.assert_array_equal(b, a + 1)
    np.testing.assert_array_equal(c, (a + 1) * 2)


# ------------------------------------------------------------------ lazy @T.prim_func


@pytest.mark.parametrize("target", TARGETS)
def test_a_lazy_prim_func_returns_its_outputs(target: str) -> None:
    # TileLang's test_out_idx_via_attr_lazy: the eager style under @T.prim_func ("Type
    # annotation required for function parameters" before).
    @T.prim_func
    def kernel(A, scale=2.0):
        A: T.Tensor[[16, 8], T.float32]
        B = T.empty([16, 8], T.float32)
        with T.Kernel(1):
            for i, j in T.grid(16, 8):
                B[i, j] = A[i, j] * scale + 1.0
        return B

    assert list(kernel.attrs["tilelang_out_idx"]) == [-1]
    a = np.arange(128, dtype=np.float32).reshape(16, 8)
    np.testing.assert_array_equal(compile_for(kernel, target)(a), a * 2 + 1)


def test_a_lazy_prim_func_names_what_needs_jit() -> None:
    with pytest.raises(KernelSyntaxError, match=r"T.const sizes \(N\).*@tl_jit.jit"):

        @T.prim_func
        def sized_by_the_call(A):
            N = T.const("N")
            A: T.Tensor[[N], T.float32]
            with T.Kernel(1):
                A[0] = 1.0

    with pytest.raises(KernelSyntaxError, match=r"parameter 'factor' .*@tl_jit.jit"):

        @T.prim_func
        def needs_a_value(A, factor):
            A: T.Tensor[[4], T.float32]
            with T.Kernel(1):
                A[0] = factor


def test_a_pointer_parameter_of_a_classic_kernel_is_refused_by_name() -> None:
    # TileLang's test_tilelang_language_ptr: TVM's parser said "Unexpected type for TIR
    # Arg: ffi.Function".
    with pytest.raises(KernelSyntaxError, match=r"parameter 'a_ptr' is annotated T.ptr"):

        @T.prim_func
        def from_pointers(a_ptr: T.ptr, n: T.int32):
            A = T.make_tensor(a_ptr, (n,), T.float32)
            with T.Kernel(1, threads=1):
                A[0] = 1.0


# ------------------------------------------------------------------ run-time clear_accum


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_gemm_clear_accum_may_be_a_run_time_condition(target: str) -> None:
    # TileLang's T.gemm(..., clear_accum=k == 0) (its tcgen5 and sm100 examples) was
    # refused with "expected a bool": C is zeroed at the steps where it holds.
    @T.prim_func
    def clear_at_first(
        A: T.Tensor((16, 32), T.float32),
        B: T.Tensor((16, 32), T.float32),
        C: T.Tensor((16, 16), T.float32),
    ):
        with T.Kernel(1, threads=32):
            A_s = T.alloc_shared((16, 8), T.float32)
            B_s = T.alloc_shared((16, 8), T.float32)
            C_l = T.alloc_fragment((16, 16), T.float32)
            T.fill(C_l, 1000.0)
            for k in T.Pipelined(4, num_stages=1):
                T.copy(A[0, k * 8], A_s)
                T.copy(B[0, k * 8], B_s)
                T.gemm(A_s, B_s, C_l, transpose_B=True, clear_accum=k == 0)
            T.copy(C_l, C)

    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 32)).astype(np.float32)
    b = rng.standard_normal((16, 32)).astype(np.float32)
    c = compile_for(clear_at_first, target, out_idx=[2])(a, b)
    np.testing.assert_allclose(c, a @ b.T, rtol=1e-5, atol=1e-5)


@T.prim_func
def _number_conditions(
    A: T.Tensor((4,), "float32"), Out: T.Tensor((4, 4), "float32"), n: T.int32, m: T.int32
):
    with T.Kernel(1, threads=4):
        for i in T.Parallel(4):
            if not n:
                Out[0, i] = 1.0
            if n and m:
                Out[1, i] = 1.0
            if n or m:
                Out[2, i] = 1.0
            if A[i]:
                Out[3, i] = 1.0


@pytest.mark.parametrize("target", TARGETS)
def test_a_number_as_a_condition_is_true_when_not_zero(target: str) -> None:
    # `if n:`, `not n`, `n and m` on int32 parameters stopped with TVM's internal
    # "Check failed: a_ty.MatchesCode(kDLBool)"; a float is true when not zero (NaN too).
    kernel = compile_for(_number_conditions, target)
    a = np.array([0.0, 1.0, -0.0, np.nan], np.float32)
    for n, m in [(0, 0), (3, 0), (-1, 5)]:
        out = np.zeros((4, 4), np.float32)
        kernel(a, out, n, m)
        expected = [not n, bool(n and m), bool(n or m)]
        np.testing.assert_array_equal(out[:3], np.array(expected, np.float32)[:, None] * np.ones(4))
        np.testing.assert_array_equal(out[3], [0.0, 1.0, 0.0, 1.0])


@T.prim_func
def _negative_element_operands(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
    with T.Kernel(1, threads=1):
        B[0] = T.atomic_load(A[-8])
        for i in T.serial(2):
            T.atomic_add(B[i - 6], 2.0)  # B[2], B[3]: proven negative, as A[i - 6] is
        T.atomic_add(B[-1], 5.0)
        T.atomic_max(B[-4], 11.0)
        T.atomic_store(B[-3], 9.0)


@pytest.mark.parametrize("target", TARGETS)
def test_negative_constant_indices_of_atomics_count_from_the_end(target: str) -> None:
    # The atomics on A[-8], B[-1], B[-4], B[-3] did nothing or read 0 (the guard dropped
    # the negative index); element accesses count from the end. (A tile op's anchor
    # below zero is a partial tile instead: the rows below zero are dropped.)
    kernel = compile_for(_negative_element_operands, target)
    a = np.arange(1, 9, dtype=np.float32)
    b = np.zeros(8, np.float32)
    kernel(a, b)
    np.testing.assert_array_equal(b, [1, 0, 2, 2, 11, 9, 0, 5])


@T.prim_func
def _scalar_into_slices(A: T.Tensor((8,), "float32"), x: T.float32):
    with T.Kernel(1, threads=1):
        A[0:4] = 1.0
        A[4:8] = x


@pytest.mark.parametrize("target", TARGETS)
def test_a_scalar_stored_into_a_slice_is_broadcast(target: str) -> None:
    # TVM refused it: "Incompatible types in BufferStore: LHS is float32x4, RHS is float32".
    kernel = compile_for(_scalar_into_slices, target)
    a = np.zeros(8, np.float32)
    kernel(a, 2.5)
    np.testing.assert_array_equal(a, [1, 1, 1, 1, 2.5, 2.5, 2.5, 2.5])
