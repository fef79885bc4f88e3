"""Warp reductions and uniform shuffles as vector code (`warp_lanes`, through
`cpu-lower-warp-shuffles`): results against numpy on c and llvm, the path each took
in ``tl.cpu_thread_path``, and the vector form in the generated C and LLVM IR."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tvm

import tl_ir.language as T
import tl_runtime
from tl_backend_api import build_artifact, create_backend_context, lower_to_sources
from tl_codegen_cpu.lowering.thread_lanes import THREAD_PATH_KEY
from tl_codegen_cpu.passes.lower_warp_shuffles import CpuLowerWarpShufflesPass
from tl_passes import PassContext

TARGETS = ("c", "llvm")
THREADS = 64
BLOCKS = 2


def _run(func: Any, target: str, tmp_path: Path, a: np.ndarray) -> Any:
    context = create_backend_context(target)
    kernel = tl_runtime.load(build_artifact(context, func, tmp_path / target, out_idx=[1]))
    return kernel(a)


def _paths(func: Any) -> list[str]:
    mod = tvm.IRModule({"main": func})
    lowered = CpuLowerWarpShufflesPass().run(mod, PassContext(target=tvm.target.Target("c")))
    key = re.escape(THREAD_PATH_KEY)
    text = lowered.script()
    return re.findall(rf'"{key}": "([^"]*)"', text) + re.findall(rf'"{key}", "([^"]*)"', text)


_REDUCE = {"sum": T.warp_reduce_sum, "max": T.warp_reduce_max, "min": T.warp_reduce_min}


def warp_reduce(kind: str, width: int, dtype: str) -> Any:
    reduce = _REDUCE[kind]

    @T.prim_func
    def main(A: T.Tensor((BLOCKS, THREADS), dtype), B: T.Tensor((BLOCKS, THREADS), dtype)):
        with T.Kernel(BLOCKS, threads=THREADS) as bx:
            tx = T.get_thread_binding(0)
            B[bx, tx] = reduce(A[bx, tx], width) * 2

    return main


def _group_reference(a: np.ndarray, kind: str, group: int) -> np.ndarray:
    grouped = a.reshape(BLOCKS, THREADS // group, group)
    reduced = {"sum": np.sum, "max": np.max, "min": np.min}[kind](grouped, axis=2, keepdims=True)
    return np.broadcast_to(reduced, grouped.shape).reshape(a.shape)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    ("kind", "width", "dtype"),
    [("sum", 32, "float32"), ("max", 32, "float32"), ("min", 8, "float32"), ("sum", 16, "int32")],
)
def test_warp_reductions_agree_with_numpy(
    target: str, kind: str, width: int, dtype: str, tmp_path: Path
) -> None:
    rng = np.random.default_rng(4)
    if dtype == "int32":
        a = rng.integers(-1000, 1000, size=(BLOCKS, THREADS), dtype=np.int32)
    else:
        a = rng.standard_normal((BLOCKS, THREADS)).astype(np.float32)
    b = _run(warp_reduce(kind, width, dtype), target, tmp_path, a)
    expected = _group_reference(a, kind, width) * 2
    np.testing.assert_allclose(b, expected, rtol=1e-5, atol=1e-5)


def test_a_warp_reduction_is_one_vector_tree_and_says_so() -> None:
    paths = _paths(warp_reduce("max", 32, "float32"))
    assert paths == [
        "lanes: warp reduction (max) over groups of 32 lanes through shuffle_transfer_0: "
        "one vector tree per group"
    ]
    source = lower_to_sources(create_backend_context("c"), warp_reduce("sum", 32, "float32"))
    text = source.files["kernel.c"]
    # One tree per group: halves folded by loops of 16, 8, 4, 2 lanes; no scalar exchange.
    assert re.search(r"for \(int32_t fold16\w* = 0; fold16\w* < 16;", text), text
    assert "shuffle_result" not in text
    ir = lower_to_sources(create_backend_context("llvm"), warp_reduce("sum", 32, "float32"))
    assert re.search(r"fadd (fast )?<(8|16) x float>", ir.files["kernel.ll"])


def _ascending_sum(value: Any, group: int) -> Any:
    offset = 1
    while offset < group:
        value = value + T.shfl_xor(value, offset)
        offset *= 2
    return value


def butterfly_ascending(group: int) -> Any:
    """``v + shfl_xor(v, 1)``, then offset 2, ... (one expression): a reduction over
    ``group`` lanes with the offsets ascending (reassociated against the GPU's order)."""

    @T.prim_func
    def main(A: T.Tensor((BLOCKS, THREADS), "float32"), B: T.Tensor((BLOCKS, THREADS), "float32")):
        with T.Kernel(BLOCKS, threads=THREADS) as bx:
            tx = T.get_thread_binding(0)
            B[bx, tx] = _ascending_sum(A[bx, tx], group)

    return main


@pytest.mark.parametrize("target", TARGETS)
def test_a_partial_ascending_butterfly_sums_aligned_groups(target: str, tmp_path: Path) -> None:
    paths = _paths(butterfly_ascending(4))
    assert len(paths) == 1 and "groups of 4 lanes" in paths[0] and "reassociated" in paths[0]
    a = np.random.default_rng(5).standard_normal((BLOCKS, THREADS)).astype(np.float32)
    b = _run(butterfly_ascending(4), target, tmp_path, a)
    np.testing.assert_allclose(b, _group_reference(a, "sum", 4), rtol=1e-5, atol=1e-5)


def uniform_shuffle(form: str, constant: int, width: int) -> Any:
    @T.prim_func
    def main(A: T.Tensor((BLOCKS, THREADS), "float32"), B: T.Tensor((BLOCKS, THREADS), "float32")):
        with T.Kernel(BLOCKS, threads=THREADS) as bx:
            tx = T.get_thread_binding(0)
            if form == "xor":
                B[bx, tx] = T.shfl_xor(A[bx, tx], constant, width)
            elif form == "down":
                B[bx, tx] = T.shfl_down(A[bx, tx], constant, width)
            elif form == "up":
                B[bx, tx] = T.shfl_up(A[bx, tx], constant, width)
            else:
                B[bx, tx] = T.shfl_sync(A[bx, tx], constant, width)

    return main


def _shuffle_reference(a: np.ndarray, form: str, constant: int, width: int) -> np.ndarray:
    lanes = np.arange(THREADS) % width
    base = np.arange(THREADS) - lanes
    if form == "xor":
        source = base + (lanes ^ constant)
    elif form == "down":
        source = np.where(
            lanes + constant < width, np.arange(THREADS) + constant, np.arange(THREADS)
        )
    elif form == "up":
        source = np.where(lanes >= constant, np.arange(THREADS) - constant, np.arange(THREADS))
    else:
        source = base + (constant & (width - 1))
    return a[:, source]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    ("form", "constant", "width"),
    [("xor", 4, 32), ("xor", 1, 8), ("down", 3, 32), ("up", 5, 16), ("lane", 7, 32)],
)
def test_uniform_shuffles_are_contiguous_copies_that_agree_with_numpy(
    target: str, form: str, constant: int, width: int, tmp_path: Path
) -> None:
    func = uniform_shuffle(form, constant, width)
    paths = _paths(func)
    assert len(paths) == 1 and paths[0].startswith("lanes: shuffle"), paths
    a = np.random.default_rng(6).standard_normal((BLOCKS, THREADS)).astype(np.float32)
    b = _run(func, target, tmp_path, a)
    np.testing.assert_array_equal(b, _shuffle_reference(a, form, constant, width))


def test_a_shuffle_by_a_varying_offset_keeps_the_exchange_and_says_why() -> None:
    @T.prim_func
    def main(A: T.Tensor((BLOCKS, THREADS), "float32"), B: T.Tensor((BLOCKS, THREADS), "float32")):
        with T.Kernel(BLOCKS, threads=THREADS) as bx:
            tx = T.get_thread_binding(0)
            value = T.alloc_var("float32")
            value = A[bx, tx]
            for i in T.serial(5):
                value = T.max(value, T.shfl_down(value, 16 >> i))
            B[bx, tx] = value

    paths = _paths(main)
    assert len(paths) == 1 and paths[0].startswith("scalar: shuffle (down)"), paths
