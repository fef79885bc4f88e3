"""TileLang's performance hints: accepted and checked everywhere, never changing the IR."""

# ruff: noqa: F841  (kernel bodies bind launch vars they do not use)
import numpy as np
import pytest

import tl_ir
import tl_ir.language as T
from tl_ir import GemmOp, tile_ops
from tl_ir.interpret import run
from tl_ir.layout import make_swizzled_layout


def _gemm_with_hints(**hints):
    @T.prim_func
    def main(
        A: T.Tensor((16, 8), "float32"),
        B: T.Tensor((8, 16), "float32"),
        C: T.Tensor((16, 16), "float32"),
    ):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((16, 8), "float32")
            B_s = T.alloc_shared((8, 16), "float32")
            C_l = T.alloc_fragment((16, 16), "float32")
            T.annotate_layout({A_s: make_swizzled_layout(A_s)})
            T.copy(A, A_s, disable_tma=True, eviction_policy="evict_first")
            T.copy(B, B_s, coalesced_width=4)
            T.gemm(A_s, B_s, C_l, **hints)
            T.copy(C_l, C)
            T.atomic_add(C[0, 0], 1.0, memory_order="relaxed")

    return main


def test_hints_are_accepted_and_the_kernel_computes_the_same():
    func = _gemm_with_hints(policy=T.GemmWarpPolicy.FullRow, clear_accum=True, k_pack=2)
    _gemm_with_hints(wg_wait=-1)  # TileLang's "do not wait"
    (gemm,) = [op for op in tile_ops(func) if isinstance(op, GemmOp)]
    assert gemm.clear_accum and not gemm.transpose_a
    assert "tl.layout_map" not in (func.attrs or {})
    rng = np.random.default_rng(1)
    a = rng.standard_normal((16, 8)).astype(np.float32)
    b = rng.standard_normal((8, 16)).astype(np.float32)
    c = np.zeros((16, 16), np.float32)
    run(func, [a, b, c])
    expected = a @ b
    expected[0, 0] += 128  # each of the 128 threads runs the scalar atomic (as in TileLang)
    np.testing.assert_allclose(c, expected, rtol=1e-5)


@pytest.mark.parametrize(
    ("hints", "message"),
    [
        ({"transpose_A": "yes"}, r"T.gemm\(transpose_A=...\): expected a bool"),
        ({"clear_accum": 2}, r"T.gemm\(clear_accum=...\): expected a bool"),
        ({"policy": "row"}, r"T.gemm\(policy=...\): expected a T.GemmWarpPolicy"),
        ({"k_pack": 0}, r"T.gemm\(k_pack=...\): expected a positive int"),
        ({"wg_wait": -3}, r"T.gemm\(wg_wait=...\): expected -1 \(no wait\) or a non-neg.*got -3"),
    ],
)
def test_bad_gemm_arguments_name_the_parameter(hints, message):
    with pytest.raises(tl_ir.KernelTypeError, match=message):
        _gemm_with_hints(**hints)


def test_gemm_mbar_and_tile_atomic_return_prev_are_not_supported_errors():
    with pytest.raises(NotImplementedError, match="mbar"):
        _gemm_with_hints(mbar=1)

    def tile_atomic_return_prev():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=4) as bx:
                T.atomic_add(A[0:4], B[0:4], return_prev=True)

        return main

    # TileLang returns the previous value of a scalar update only.
    with pytest.raises(tl_ir.UnsupportedError, match="only a scalar update"):
        tile_atomic_return_prev()
    with pytest.raises(tl_ir.UnsupportedError, match="return_prev"):
        T.atomic_addx2(None, None, return_prev=True)


def test_bad_memory_order_and_eviction_policy_list_the_choices():
    def build(order, eviction):
        @T.prim_func
        def main(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=4) as bx:
                T.copy(A, B, eviction_policy=eviction)
                T.atomic_max(A[0], 1.0, memory_order=order)

        return main

    build("seq_cst", None)
    with pytest.raises(tl_ir.KernelTypeError, match="relaxed, consume"):
        build("sequential", None)
    with pytest.raises(tl_ir.KernelTypeError, match="evict_normal"):
        build(None, "evict_sometimes")


def test_layout_helpers_check_their_buffer_and_fragment_layouts_are_unsupported():
    from tl_ir import layout

    with pytest.raises(tl_ir.KernelTypeError, match="expected a buffer"):
        layout.make_swizzled_layout(3)
    with pytest.raises(NotImplementedError, match="register-fragment layouts"):
        layout.make_gemm_fragment_8x8()


def test_a_layout_function_of_another_rank_is_refused_naming_the_tile():
    # T.annotate_layout({S: lambda i, j: i}) on a 1-D tile was recorded as it came.
    from tvm import tirx

    from tl_ir.layout import check_index_map_rank

    shared = tirx.decl_buffer((16,), "float32", name="S", scope="shared.dyn")
    with pytest.raises(
        tl_ir.KernelTypeError,
        match=r"T.annotate_layout\(\{S: ...\}\): expected a layout of 1 index, one per "
        r"dim of S \(rank 1, shape \(16\)\), got a function of 2 indices",
    ):
        check_index_map_rank(shared, tirx.IndexMap.from_func(lambda i, j: i, ndim=1))
    check_index_map_rank(shared, tirx.IndexMap.from_func(lambda i: (i // 4, i % 4), ndim=1))


def test_small_tilelang_names_in_a_kernel():
    seen = []

    @T.prim_func
    def main(A: T.Tensor((4, 8), "float32"), B: T.Tensor((4, 8), "float32")):
        with T.Kernel(2, threads=(4, 2)) as bx:
            T.disable_warp_group_reg_alloc()
            T.annotate_min_blocks_per_sm(2)
            seen.append((T.get_thread_extent(1), len(T.get_block_extents())))
            seen.append(len(T.get_thread_bindings()))
            for i, j in T.Parallel(4, 4):
                B[i, bx * 4 + j] = T.ieee_add(T.__exp(A[i, bx * 4 + j]), T.float32(0))
            for k in T.Serial(2):
                r, c = T.index_to_coordinates(k * 2, (4, 8))
                B[r, c] = T.fast_rcp(A[r, c]) * 0 + B[r, c]

    a = np.random.default_rng(3).standard_normal((4, 8)).astype(np.float32)
    b = np.zeros((4, 8), np.float32)
    run(main, [a, b])
    np.testing.assert_allclose(b, np.exp(a), rtol=1e-5)
    assert seen == [(2, 1), 2]
    with pytest.raises(NotImplementedError, match="rounding"):
        T.ieee_add(1.0, 2.0, rounding_mode="rz")


def test_clamp_takes_tilelangs_keyword_names():
    @T.prim_func
    def main(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=4) as bx:
            for i in T.Parallel(4):
                B[i] = T.clamp(A[i], min_val=T.float32(-1), max_val=T.float32(1))

    a = np.array([-3.0, -0.5, 0.5, 3.0], np.float32)
    b = np.zeros(4, np.float32)
    run(main, [a, b])
    np.testing.assert_array_equal(b, np.clip(a, -1, 1))


def test_any_of_and_all_of_over_a_row():
    @T.prim_func
    def main(
        Mask: T.Tensor((3, 4), "bool"), Any: T.Tensor((3,), "int32"), All: T.Tensor((3,), "int32")
    ):
        with T.Kernel(3, threads=1) as bx:
            Any[bx] = T.if_then_else(T.any_of(Mask[bx, :]), 1, 0)
            All[bx] = T.if_then_else(T.all_of(Mask[bx, 0:4]), 1, 0)

    mask = np.array([[0, 0, 0, 0], [0, 1, 0, 0], [1, 1, 1, 1]], dtype=bool)
    any_out = np.zeros(3, np.int32)
    all_out = np.zeros(3, np.int32)
    run(main, [mask, any_out, all_out])
    np.testing.assert_array_equal(any_out, [0, 1, 1])
    np.testing.assert_array_equal(all_out, [0, 0, 1])


def test_transpose_swaps_the_last_two_dims_of_a_tile():
    @T.prim_func
    def main(A: T.Tensor((8, 4), "float32"), B: T.Tensor((4, 8), "float32")):
        with T.Kernel(1, threads=32) as bx:
            tile = T.alloc_shared((8, 4), "float32")
            tile_t = T.alloc_shared((4, 8), "float32")
            T.copy(A, tile)
            T.transpose(tile, tile_t)
            T.copy(tile_t, B)

    a = np.arange(32, dtype=np.float32).reshape(8, 4)
    b = np.zeros((4, 8), np.float32)
    run(main, [a, b])
    np.testing.assert_array_equal(b, a.T)

    def bad():
        @T.prim_func
        def main(A: T.Tensor((8, 4), "float32")):
            with T.Kernel(1, threads=32) as bx:
                tile = T.alloc_shared((8, 4), "float32")
                T.transpose(A, tile)

        return main

    with pytest.raises(tl_ir.ShapeMismatchError, match="transposed"):
        bad()
