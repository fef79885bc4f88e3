# ruff: noqa: F841  (kernel bodies bind launch vars they do not use)
"""LANGUAGE.md "Diagnostics": each example raises the right class with file, line,
the offending source line and a message saying what was expected."""

import inspect

import pytest

import tl_ir.language as T
from tl_ir import (
    KernelSyntaxError,
    KernelTypeError,
    ScopeError,
    ShapeMismatchError,
    TileLangError,
    UnknownDtypeError,
    UnsupportedError,
)

THIS_FILE = __file__


def _line_of(func, text):
    lines, start = inspect.getsourcelines(func)
    for offset, line in enumerate(lines):
        if text in line:
            return start + offset
    raise AssertionError(f"{text!r} not in {func.__name__}")


def _check(err, build, marker, cls, *phrases):
    assert type(err) is cls
    assert err.filename == THIS_FILE
    assert err.lineno == _line_of(build, marker)
    assert marker in err.source_line
    text = str(err)
    assert f"{THIS_FILE}:{err.lineno}" in text and marker in text
    for phrase in phrases:
        assert phrase in text


def copy_shapes_cannot_match():
    @T.prim_func
    def main(A: T.Tensor((128, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((32, 32), "float32")
            T.copy(A[0:64, 0:32], S)

    return main


def gemm_inner_dims_disagree():
    @T.prim_func
    def main(A: T.Tensor((128, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((64, 32), "float16")
            b = T.alloc_shared((16, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            T.gemm(a, b, c)

    return main


def unknown_dtype_in_body():
    @T.prim_func
    def main(A: T.Tensor((128, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((64, 32), "float17")

    return main


def unknown_dtype_in_param():
    @T.prim_func
    def main(A: T.Tensor((128, 64), "flaot32")):
        with T.Kernel(1, threads=128) as bx:
            A[0, 0] = T.float32(0)

    return main


def unknown_dtype_attribute():
    @T.prim_func
    def main(A: T.Tensor((128, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            A[0, 0] = T.float17(1)

    return main


def fragment_outside_kernel():
    @T.prim_func
    def main(A: T.Tensor((128, 64), "float32")):
        c = T.alloc_fragment((64, 64), "float32")
        with T.Kernel(1, threads=128) as bx:
            T.clear(c)

    return main


def parallel_over_runtime_extent():
    @T.prim_func
    def main(A: T.Tensor((128, 64), "float32"), n: T.int32):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(n):
                A[0, i] = T.float32(0)

    return main


def undefined_name():
    @T.prim_func
    def main(A: T.Tensor((128, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            T.copy(A, Zzz)  # noqa: F821

    return main


def copy_of_a_scalar():
    @T.prim_func
    def main(A: T.Tensor((128, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((32, 32), "float32")
            T.copy(3, S)

    return main


def nested_kernels():
    @T.prim_func
    def main(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            A[0] = T.float32(0)
            with T.Kernel(1, threads=128) as by:
                A[1] = T.float32(0)

    return main


def reduce_into_wrong_shape():
    @T.prim_func
    def main(A: T.Tensor((128, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            t = T.alloc_fragment((16, 32), "float32")
            r = T.alloc_fragment((32,), "float32")
            T.reduce_sum(t, r, dim=1)

    return main


def gemm_mixed_operand_dtypes():
    @T.prim_func
    def main(A: T.Tensor((16, 16), "float16")):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((16, 16), "float16")
            b = T.alloc_shared((16, 16), "float32")
            c = T.alloc_fragment((16, 16), "float32")
            T.gemm(a, b, c)  # fp16 A, fp32 B

    return main


def gemm_narrow_accumulator():
    @T.prim_func
    def main(A: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((16, 16), "float32")
            b = T.alloc_shared((16, 16), "float32")
            c = T.alloc_fragment((16, 16), "float16")
            T.gemm(a, b, c)  # fp32 products into fp16

    return main


def gemm_int_into_float():
    @T.prim_func
    def main(A: T.Tensor((16, 16), "int8")):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((16, 16), "int8")
            b = T.alloc_shared((16, 16), "int8")
            c = T.alloc_fragment((16, 16), "float32")
            T.gemm(a, b, c)  # int8 products into float32

    return main


CASES = [
    (
        gemm_mixed_operand_dtypes,
        "T.gemm(a, b, c)  # fp16 A",
        KernelTypeError,
        ["expected A and B of one dtype", "A a is float16, B b is float32, C c is float32"],
    ),
    (
        gemm_narrow_accumulator,
        "T.gemm(a, b, c)  # fp32 products",
        KernelTypeError,
        ["at least as wide", "C c is float16"],
    ),
    (
        gemm_int_into_float,
        "T.gemm(a, b, c)  # int8 products",
        KernelTypeError,
        ["same kind", "A a is int8"],
    ),
    (
        copy_shapes_cannot_match,
        "T.copy(A[0:64, 0:32], S)",
        ShapeMismatchError,
        ["(64, 32)", "(32, 32)", "expected the same extents"],
    ),
    (
        gemm_inner_dims_disagree,
        "T.gemm(a, b, c)",
        ShapeMismatchError,
        ["inner dims disagree", "expected A's K (32) to equal B's K (16)"],
    ),
    (
        unknown_dtype_in_body,
        '"float17"',
        UnknownDtypeError,
        ["'float17' does not exist", "expected one of"],
    ),
    (
        unknown_dtype_in_param,
        '"flaot32"',
        UnknownDtypeError,
        ["'flaot32' does not exist", "float32"],
    ),
    (unknown_dtype_attribute, "T.float17(1)", UnknownDtypeError, ["'float17' does not exist"]),
    (
        fragment_outside_kernel,
        "T.alloc_fragment((64, 64)",
        ScopeError,
        ["only allowed inside `with T.Kernel(...)`"],
    ),
    (
        parallel_over_runtime_extent,
        "T.Parallel(n)",
        KernelTypeError,
        ["has no compile-time upper bound", "run-time extent n"],
    ),
    (undefined_name, "T.copy(A, Zzz)", KernelSyntaxError, ["Zzz"]),
    (
        copy_of_a_scalar,
        "T.copy(3, S)",
        KernelTypeError,
        ["expected a buffer, a region", "got int 3"],
    ),
    (
        nested_kernels,
        "with T.Kernel(1, threads=128) as by",
        UnsupportedError,
        ["T.Kernel inside another T.Kernel"],
    ),
    (
        reduce_into_wrong_shape,
        "T.reduce_sum(t, r, dim=1)",
        ShapeMismatchError,
        ["gives (16)", "(32)"],
    ),
]


@pytest.mark.parametrize(
    ("build", "marker", "cls", "phrases"), CASES, ids=[c[0].__name__ for c in CASES]
)
def test_diagnostic(build, marker, cls, phrases):
    with pytest.raises(TileLangError) as info:
        build()
    _check(info.value, build, marker, cls, *phrases)


def test_tvm_error_is_chained_not_the_only_message():
    with pytest.raises(KernelSyntaxError) as info:
        undefined_name()
    assert info.value.__cause__ is not None
    assert "unknown name" in str(info.value)


def test_errors_are_one_family():
    for cls in (
        KernelSyntaxError,
        KernelTypeError,
        ScopeError,
        ShapeMismatchError,
        UnsupportedError,
    ):
        assert issubclass(cls, TileLangError)
    assert issubclass(UnknownDtypeError, KernelTypeError)
