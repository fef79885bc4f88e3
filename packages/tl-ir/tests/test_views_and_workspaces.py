"""Views of a buffer's memory (T.view, T.reshape, T.Tensor(shape, dtype, data)) and
global workspaces (T.alloc_global)."""

# ruff: noqa: F841  (kernel bodies bind launch vars they do not use)
import numpy as np
import pytest
import tvm_ffi
from tvm import tirx

import tl_ir
import tl_ir.language as T
from tl_ir.interpret import run


def test_reshape_and_tensor_data_view_share_the_source_memory():
    @T.prim_func
    def main(A: T.Tensor((16,), "float32"), B: T.Tensor((4, 4), "float32")):
        with T.Kernel(1, threads=4) as bx:
            A2 = T.reshape(A, (4, 4))
            T.copy(A2, B)
            V = T.Tensor((2, 8), "float32", A.data)
            V[1, 0] = T.float32(-1)

    a = np.arange(16, dtype=np.float32)
    b = np.zeros((4, 4), np.float32)
    run(main, [a, b])
    np.testing.assert_array_equal(b, np.arange(16, dtype=np.float32).reshape(4, 4))
    assert a[8] == -1


def test_view_under_another_dtype_reinterprets_the_bits():
    @T.prim_func
    def main(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=4) as bx:
            T.copy(T.view(A, dtype="int32"), B)

    a = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    b = np.zeros(4, np.int32)
    run(main, [a, b])
    np.testing.assert_array_equal(b, a.view(np.int32))


def test_view_that_does_not_cover_the_source_is_refused():
    def build():
        @T.prim_func
        def main(A: T.Tensor((16,), "float32")):
            with T.Kernel(1, threads=4) as bx:
                V = T.view(A, (4, 8))

        return main

    with pytest.raises(tl_ir.ShapeMismatchError, match="must cover its source exactly"):
        build()


def test_alloc_global_is_a_global_scope_workspace_outside_the_kernel():
    @T.prim_func
    def main(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
        C = T.alloc_global((8,), "float32")
        with T.Kernel(2, threads=4) as bx:
            T.copy(A[bx * 4 : (bx + 1) * 4], C[bx * 4 : (bx + 1) * 4])
            T.copy(C[bx * 4 : (bx + 1) * 4], B[bx * 4 : (bx + 1) * 4])

    allocs = []
    tvm_ffi.structural_walk(main.body, (tirx.AllocBuffer, allocs.append), order="pre")
    assert [tl_ir.buffer_scope(a.buffer) for a in allocs] == ["global"]
    a = np.arange(8, dtype=np.float32)
    b = np.zeros(8, np.float32)
    run(main, [a, b])
    np.testing.assert_array_equal(b, a)


def test_strided_tensor_parameter_in_both_forms():
    @T.prim_func
    def main(
        A: T.StridedTensor[(4, 2), (1, 4), T.float32],
        B: T.StridedTensor((4, 2), (2, 1), "float32"),
    ):
        with T.Kernel(1, threads=1) as bx:
            B[0, 0] = A[0, 0]

    a_type, b_type = (p.ty for p in main.params)
    assert [int(s) for s in a_type.strides] == [1, 4]
    assert [int(s) for s in b_type.strides] == [2, 1]
    with pytest.raises(tl_ir.KernelTypeError, match="one stride per dim"):
        T.StridedTensor((4, 2), (1,), "float32")
