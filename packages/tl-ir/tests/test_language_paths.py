"""Less common forms of the language: each parses to the documented IR or raises the
documented error."""

# ruff: noqa: F841  (kernel bodies bind launch vars they do not use)
import numpy as np
import pytest
from tvm import tirx

import tl_ir
import tl_ir.language as T
from tl_ir import AtomicOp, CopyOp, ReduceOp, tile_ops
from tl_ir.interpret import run


def _ints(values):
    return tuple(int(v) for v in values)


def test_subscript_tensor_annotation_and_3d_grid():
    @T.prim_func
    def main(A: T.Tensor[(2, 3, 4), "float32"]):  # noqa: F821 (a dtype, not a name)
        with T.Kernel(2, 3, 4, threads=(1, 1, 1)) as (bx, by, bz):
            A[bx, by, bz] = T.cast(T.get_block_binding(2), T.float32)

    launch = tl_ir.kernel_launch(main)
    assert _ints(launch.grid) == (2, 3, 4) and _ints(launch.threads) == (1, 1, 1)
    a = np.zeros((2, 3, 4), np.float32)
    run(main, [a])
    np.testing.assert_array_equal(a, np.broadcast_to(np.arange(4, dtype=np.float32), (2, 3, 4)))


def test_copy_element_to_element_and_rank_errors():
    @T.prim_func
    def main(A: T.Tensor((4, 4), "float32"), B: T.Tensor((4, 4), "float32")):
        with T.Kernel(1, threads=1) as bx:
            T.copy(A[1, 2], B[2, 1])

    (op,) = tile_ops(main)
    assert isinstance(op, CopyOp) and _ints(op.src.extents) == (1, 1)

    def rank_mismatch():
        @T.prim_func
        def main(A: T.Tensor((16,), "float32")):
            with T.Kernel(1, threads=1) as bx:
                S = T.alloc_shared((4, 4), "float32")
                T.copy(A[0], S)

        return main

    with pytest.raises(tl_ir.ShapeMismatchError, match="1 index"):
        rank_mismatch()


def test_reduce_keepdim_destination_and_bad_dim():
    @T.prim_func
    def main(A: T.Tensor((4, 8), "float32"), B: T.Tensor((4, 1), "float32")):
        with T.Kernel(1, threads=32) as bx:
            t = T.alloc_fragment((4, 8), "float32")
            r = T.alloc_fragment((4, 1), "float32")
            T.copy(A, t)
            T.reduce_absmax(t, r, dim=-1)
            T.copy(r, B)

    (_, op, _) = tile_ops(main)
    assert isinstance(op, ReduceOp) and op.dim == 1 and op.kind == "absmax"
    a = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    b = np.zeros((4, 1), np.float32)
    run(main, [a, b])
    np.testing.assert_allclose(b[:, 0], np.abs(a).max(axis=1))

    def bad_dim():
        @T.prim_func
        def main(A: T.Tensor((4, 8), "float32")):
            with T.Kernel(1, threads=32) as bx:
                t = T.alloc_fragment((4, 8), "float32")
                r = T.alloc_fragment((4,), "float32")
                T.reduce_min(t, r, dim=2)

        return main

    with pytest.raises(tl_ir.KernelTypeError, match="out of range"):
        bad_dim()


def test_cumsum_and_gemm_operand_errors():
    def cumsum_shape():
        @T.prim_func
        def main(A: T.Tensor((4, 8), "float32")):
            with T.Kernel(1, threads=32) as bx:
                t = T.alloc_fragment((4, 8), "float32")
                u = T.alloc_fragment((4, 4), "float32")
                T.cumsum(t, u, dim=1)

        return main

    def gemm_element():
        @T.prim_func
        def main(A: T.Tensor((4, 4), "float32")):
            with T.Kernel(1, threads=32) as bx:
                c = T.alloc_fragment((4, 4), "float32")
                T.gemm(A[0, 0], A, c)

        return main

    with pytest.raises(tl_ir.ShapeMismatchError):
        cumsum_shape()
    with pytest.raises(tl_ir.KernelTypeError, match="whole tile"):
        gemm_element()


def test_atomic_anchored_tile_and_print_tile():
    @T.prim_func
    def main(A: T.Tensor((8,), "float32"), Out: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=8) as bx:
            t = T.alloc_fragment((8,), "float32")
            T.copy(A, t)
            T.atomic_add(Out[4], t)
            T.print(t, msg="tile")

    atomic, printed = tile_ops(main)[1:]
    assert isinstance(atomic, AtomicOp) and _ints(atomic.dst.extents) == (8,)
    assert isinstance(printed.value, tl_ir.Region)
    out = np.ones(16, np.float32)
    a = np.arange(8, dtype=np.float32)
    run(main, [a, out])
    np.testing.assert_array_equal(out[4:12], a + 1)
    np.testing.assert_array_equal(out[:4], 1)


def test_hint_errors_and_index_map_layout():
    def build(layout_map, panel, enable=True):
        @T.prim_func
        def main(A: T.Tensor((4, 4), "float32")):
            with T.Kernel(1, threads=16) as bx:
                s = T.alloc_shared((4, 4), "float32")
                T.annotate_layout(layout_map(s))
                T.use_swizzle(panel, enable=enable)
                T.copy(A, s)

        return main

    f = build(lambda s: {s: tirx.IndexMap.from_func(lambda i, j: (i, j))}, 4, enable=False)
    assert "s" in f.attrs["tl.layout_map"] and "tl.swizzle_panel" not in f.attrs
    with pytest.raises(tl_ir.KernelTypeError, match="positive int"):
        build(lambda s: {}, 0)
    with pytest.raises(tl_ir.KernelTypeError, match="dict"):
        build(lambda s: [s], 4)
    with pytest.raises(tl_ir.KernelTypeError, match="buffer keys"):
        build(lambda s: {"s": None}, 4)
    with pytest.raises(tl_ir.KernelTypeError, match="layout function"):
        build(lambda s: {s: 3}, 4)


def test_print_message_must_be_a_string():
    def build():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1) as bx:
                T.print(A[0], msg=3)

        return main

    with pytest.raises(tl_ir.KernelTypeError, match="msg to be a str"):
        build()
