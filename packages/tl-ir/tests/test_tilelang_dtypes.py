"""TileLang's dtype objects: strings that construct values, usable wherever a dtype goes."""

# ruff: noqa: F841  (kernel bodies bind launch vars they do not use)
import numpy as np
import pytest
from tvm import tirx

import tl_ir
import tl_ir.language as T
from tl_ir.interpret import run


def test_dtype_objects_are_strings_and_aliases_name_canonical_dtypes():
    assert "uint8" == T.uint8 and T.float16 == "float16"  # noqa: SIM300 - str on the left
    assert isinstance(T.float32, T.dtype) and isinstance(T.float32, str)
    assert (T.float, T.half, T.double) == ("float32", "float16", "float64")
    assert (T.int, T.uint, T.long, T.short) == ("int32", "uint32", "int64", "int16")
    assert T.dtype("half") == T.float16 and T.dtype(np.float32) == "float32"
    assert T.dtype(float) == "float32" and T.dtype(int) == "int32"
    assert T.float16.bits == 16 and T.float16.bytes == 2 and T.bool.bytes == 1
    assert tl_ir.numpy_dtype(T.float8_e4m3fn) == np.uint8
    with pytest.raises(tl_ir.UnknownDtypeError, match="floaty"):
        T.dtype("floaty")


def test_dtype_objects_construct_constants_variables_and_casts():
    assert str(T.float32(0).ty.dtype) == "float32"
    assert float(T.float32(0).value) == 0.0
    assert str(T.int32().ty.dtype) == "int32"
    assert str(T.float16(T.int32(3)).ty.dtype) == "float16"
    assert str(T.infinity(T.float32)) == str(tirx.infinity("float32"))
    assert str(T.max_value("half").ty.dtype) == "float16"


def test_expr_dtype_and_prim_expr_as_in_tilelang():
    import tvm

    n = tirx.Var("n", "int32")
    assert n.dtype == "int32" and (n * 2).dtype == "int32"
    assert isinstance(n, tvm.tirx.PrimExpr) and not isinstance(3, tvm.tirx.PrimExpr)


def _softmax_row_max(M, N, dtype: T.dtype = T.float16, accum_dtype: T.dtype = T.float):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), scale: T.float32, Out: T.Tensor((M,), accum_dtype)):
        with T.Kernel(1, threads=32) as bx:
            tile = T.alloc_fragment((M, N), accum_dtype)
            row = T.alloc_fragment((M,), accum_dtype)
            T.fill(row, -T.infinity(accum_dtype))
            for i, j in T.Parallel(M, N):
                tile[i, j] = T.cast(A[i, j], T.float32) * scale
                if A[i, j].dtype == "float16" and tile[i, j] > row[i]:
                    row[i] = tile[i, j]
            T.copy(row, Out)

    return main


def test_kernel_written_with_dtype_objects_runs():
    func = _softmax_row_max(4, 8)
    assert [str(p.ty.dtype) for p in func.params if hasattr(p.ty, "shape")] == [
        "float16",
        "float32",
    ]
    a = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float16)
    out = np.zeros(4, np.float32)
    run(func, [a, 2.0, out])
    np.testing.assert_allclose(out, 2 * a.astype(np.float32).max(axis=1), rtol=1e-6)


def test_float8_tensor_parameters_parse():
    @T.prim_func
    def main(A: T.Tensor((16,), T.float8_e4m3fn), B: T.Tensor((16,), "float8_e5m2")):
        with T.Kernel(1, threads=16) as bx:
            for i in T.Parallel(16):
                B[i] = T.cast(A[i], T.float8_e5m2)

    assert [str(p.ty.dtype) for p in main.params] == ["float8_e4m3fn", "float8_e5m2"]
