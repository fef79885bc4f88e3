"""TileLang spellings from issue 20 item 7 and items 3-4: each works here or raises an
error saying what to write instead."""

from __future__ import annotations

import pytest

import tl_ir
import tl_ir.language as T
from tl_ir.errors import KernelTypeError


def _kernel_with_source(source: object) -> object:
    @T.prim_func
    def main(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
        T.import_source(source)
        with T.Kernel(1, threads=8) as _bx:
            for i in T.Parallel(8):
                B[i] = A[i] + 1

    return main


def test_import_source_none_is_a_no_op() -> None:
    assert "import_source" not in str(_kernel_with_source(None))


def test_import_source_text_is_recorded_for_the_backend() -> None:
    """The backend decides: cuda places the text before its kernels, a backend that
    cannot compile it refuses the kernel when lowering (tl-codegen-cuda's tests)."""
    from tl_ir.frontend import IMPORTED_SOURCE_ATTR

    text = "__device__ int f() { return 1; }"
    func = _kernel_with_source(text)
    assert [str(t) for t in func.attrs[IMPORTED_SOURCE_ATTR]] == [text]
    with pytest.raises(KernelTypeError, match="expected a string of device source or None"):
        _kernel_with_source(3)


def test_float8_e4m3_is_the_e4m3fn_alias() -> None:
    assert T.float8_e4m3 is T.float8_e4m3fn
    assert tl_ir.normalize_dtype("float8_e4m3") == "float8_e4m3fn"


def _bits_kernel(tilelang_order: bool) -> object:
    @T.prim_func
    def main(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "int32")):
        with T.Kernel(1, threads=8) as _bx:
            for i in T.Parallel(8):
                if tilelang_order:
                    B[i] = T.reinterpret(A[i], T.int32)
                else:
                    B[i] = T.reinterpret("int32", A[i])

    return main


def test_reinterpret_takes_either_argument_order() -> None:
    assert str(_bits_kernel(True)) == str(_bits_kernel(False))
    assert "reinterpret" in str(_bits_kernel(True))


def test_reinterpret_without_a_dtype_is_refused() -> None:
    with pytest.raises(KernelTypeError, match="one dtype and one value"):

        @T.prim_func
        def bad(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=8) as _bx:
                for i in T.Parallel(8):
                    B[i] = T.reinterpret(A[i], A[i])
