"""The GPU language (`tl_ir.language.gpu`): one list of names, each of them ``T.<name>``."""

from __future__ import annotations

from typing import Any

import pytest
import tvm
from tvm import tirx

import tl_ir.language as T
from tl_ir.errors import TileLangError, UnsupportedError
from tl_ir.language import gpu
from tl_ir.language._compat import GPU_ONLY, UNSUPPORTED, status
from tl_ir.language._tilelang_names import TILELANG_NAMES


def _is_gpu_object(value: object) -> bool:
    return any(value is getattr(gpu, name) for name in gpu.__all__)


def test_every_function_the_gpu_module_defines_is_in_its_list() -> None:
    defined = {
        name
        for name, value in vars(gpu).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == gpu.__name__
    }
    assert defined, "the GPU language defines its functions in tl_ir.language.gpu"
    assert defined <= set(gpu.__all__), sorted(defined - set(gpu.__all__))
    assert len(gpu.__all__) == len(set(gpu.__all__))


def test_the_gpu_names_reachable_as_T_names_are_exactly_the_list() -> None:
    for name in gpu.__all__:
        assert getattr(T, name) is getattr(gpu, name), name
    assert set(gpu.__all__) <= set(T.__all__)
    # No other T name is (or is bound to) a GPU language object: the list is the surface.
    reachable = {name for name in dir(T) if _is_gpu_object(getattr(T, name))}
    assert reachable == set(gpu.__all__), sorted(reachable ^ set(gpu.__all__))
    exported = {name for name in T.__all__ if _is_gpu_object(getattr(T, name))}
    assert exported == set(gpu.__all__)


def test_the_compatibility_table_takes_its_gpu_rows_from_the_list() -> None:
    names = {name for group in TILELANG_NAMES.values() for name in group}
    gpu_only = {name for name in names if status(name)[0] == GPU_ONLY}
    # The warp collectives run on the CPU targets too (cpu-lower-warp-shuffles).
    assert gpu_only == set()
    for name in set(gpu.__all__) & names:
        state, note = status(name)
        assert state == UNSUPPORTED or "tl_ir.language.gpu" in note, (name, state, note)


def test_gemm_warp_policy_is_the_one_tilelang_enum() -> None:
    from tl_ir.language._hints import GemmWarpPolicy

    assert gpu.GemmWarpPolicy is GemmWarpPolicy is T.GemmWarpPolicy
    assert [(m.name, int(m)) for m in GemmWarpPolicy] == [
        ("Square", 0),
        ("FullRow", 1),
        ("FullCol", 2),
    ]


def test_alloc_barrier_says_it_is_not_supported() -> None:
    with pytest.raises(UnsupportedError, match=r"T.alloc_barrier: memory barriers"):
        T.alloc_barrier(128)


@pytest.mark.parametrize("width", [0, 3, 48, True, 2.0])
def test_a_width_that_is_not_a_power_of_two_is_refused_naming_the_function(width: object) -> None:
    value = tirx.Var("value", "float32")
    with pytest.raises(ValueError, match=r"warp_reduce_sum: width must be a power of two"):
        T.warp_reduce_sum(value, width)


FULL_MASK = 0xFFFFFFFF


def shuffles(masked: bool) -> Any:
    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding(0)
            if masked:
                B[tx] = (
                    T.shfl_xor(A[tx], 1, 32, FULL_MASK)
                    + T.shfl_down(A[tx], 2, mask=FULL_MASK)
                    + T.shfl_up(A[tx], 2, 16, T.uint32(FULL_MASK))
                )
            else:
                B[tx] = T.shfl_xor(A[tx], 1) + T.shfl_down(A[tx], 2) + T.shfl_up(A[tx], 2, 16)

    return main


def test_tilelangs_full_warp_mask_gives_the_same_ir_as_no_mask() -> None:
    tvm.ir.assert_structural_equal(shuffles(masked=True), shuffles(masked=False))


@pytest.mark.parametrize("name", ["shfl_sync", "shfl_xor", "shfl_down", "shfl_up"])
def test_a_partial_shuffle_mask_is_refused_naming_the_function(name: str) -> None:
    value = tirx.Var("value", "float32")
    with pytest.raises(UnsupportedError, match=rf"T.{name}\(mask=...\): only the full-warp mask"):
        getattr(T, name)(value, 1, 32, 0xFFFF)


def test_a_named_barrier_is_the_block_barrier_with_its_id_and_count() -> None:
    named = T.sync_threads(3, 128)
    assert named.op.name == "tirx.tvm_storage_sync"
    assert [int(a.value) for a in named.args[1:]] == [3, 128]
    assert len(T.sync_threads().args) == 1


def staged_copy(hints: dict[str, Any] | None) -> Any:
    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((128,), "float32")
            if hints is None:
                T.copy(A, S)
            else:
                T.async_copy(A, S, **hints)
            T.copy(S, B)

    return main


def test_async_copy_takes_tilelangs_hints_and_copies_as_t_copy_does() -> None:
    hinted = staged_copy({"coalesced_width": 4, "annotations": {"note": 1}})
    tvm.ir.assert_structural_equal(hinted, staged_copy(None))
    with pytest.raises(TileLangError, match=r"T.copy\(coalesced_width=...\)"):
        staged_copy({"coalesced_width": 0})


def lane_indices(keyword: bool) -> Any:
    @T.prim_func
    def main(B: T.Tensor((128,), "int32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding(0)
            if keyword:
                B[tx] = T.get_lane_idx(warp_size=64) + T.get_warp_idx(warp_size=64)
            else:
                B[tx] = T.get_lane_idx(64) + T.get_warp_idx(64)

    return main


def test_lane_and_warp_indices_take_tilelangs_warp_size_keyword() -> None:
    tvm.ir.assert_structural_equal(lane_indices(keyword=True), lane_indices(keyword=False))
