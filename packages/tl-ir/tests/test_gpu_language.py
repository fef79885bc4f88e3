"""The GPU language (`tl_ir.language.gpu`): one list of names, each of them ``T.<name>``."""

from __future__ import annotations

import pytest
from tvm import tirx

import tl_ir.language as T
from tl_ir.errors import UnsupportedError
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
    assert gpu_only == {n for n in gpu.__all__ if n.startswith(("shfl_", "warp_reduce_"))}
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
