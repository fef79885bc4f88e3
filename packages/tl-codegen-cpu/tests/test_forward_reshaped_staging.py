"""Staging the GPU way through reshaped tiles, flat indices, workspaces and thread masks
becomes direct loops on the CPU (`cpu-forward-copies` and what feeds it), and one-block
grids start no thread team."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tvm
from cpu_passes_testing import make_pass, run_on_host
from tvm import tirx

import tl_ir.language as T
import tl_jit
from tl_backend_api import create_backend_context, lower_to_sources
from tl_backend_api.artifact import kernel_module, kernel_symbol
from tl_codegen_cpu.lowering.divmod_loops import split_divmod_loops
from tl_codegen_cpu.pipeline import LLVM_PIPELINE
from tl_passes import Pipeline

LOWER = ("cpu-lower-launch", "cpu-forward-copies", "cpu-lower-tile-ops")
LOWER += ("cpu-lower-parallel-loops", "cpu-localize-tiles", "simplify")


def _lowered(func: Any, names: tuple[str, ...] = LOWER) -> tvm.IRModule:
    passes = tuple(make_pass(n) for n in names)
    return Pipeline("test", passes).run(tvm.IRModule({"main": func}), tvm.target.Target("llvm"))


def _main(mod: tvm.IRModule) -> Any:
    return mod["main"].with_attr("global_symbol", "main")


def composable_copy_kernel(M: int, N: int, block: int) -> Any:
    """TileLang's composable-index copy: a tile stored at ``i * block + j`` of a flat
    tile, which a flat loop writes out at ``i // block`` and ``i % block``."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float16"), B: T.Tensor((M * N,), "float16")):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=128) as (bx, by):
            A_local = T.alloc_fragment([block, block], "float16")
            B_local = T.alloc_fragment([block * block], "float16")
            T.copy(A[by * block, bx * block], A_local)
            for i, j in T.Parallel(block, block):
                B_local[i * block + j] = A_local[i, j]
            for i in T.Parallel(block * block):
                B[by * block * N + bx * block + i // block * N + i % block] = B_local[i]

    return main


def test_a_flat_staged_tile_is_forwarded_into_a_vectorizable_nest() -> None:
    M, N, block = 64, 96, 32
    mod = _lowered(composable_copy_kernel(M, N, block))
    text = mod.script()
    assert "A_local[" not in text and "B_local[" not in text
    # The flat loop was split at // and %: a contiguous inner loop, no division per element.
    assert "T.vectorized(32)" in text and "// 32" not in text and "% 32" not in text
    a = np.random.default_rng(1).standard_normal((M, N)).astype(np.float16)
    _, out = run_on_host(_main(mod), a, np.zeros(M * N, np.float16))
    np.testing.assert_array_equal(out, a.reshape(-1))


def reshaped_shift_kernel(M: int, N: int, block: int) -> Any:
    """``C = A shifted up one row + 1`` through a flat tile and a ``T.reshape`` view of it
    (A's tile one row lower: partial tiles read 0 past A's last row)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=1) as (bx, by):
            A_local = T.alloc_fragment((block, block), "float32")
            F = T.alloc_fragment((block * block,), "float32")
            T.copy(A[by * block + 1, bx * block], A_local)
            for i, j in T.Parallel(block, block):
                F[i * block + j] = A_local[i, j] + 1.0
            F_2d = T.reshape(F, [block, block])
            T.copy(F_2d, C[by * block, bx * block])

    return main


@pytest.mark.parametrize(("M", "N", "block"), [(32, 48, 16), (37, 21, 16)], ids=["full", "ragged"])
def test_a_view_of_a_flat_tile_keeps_the_padding_of_partial_tiles(
    M: int, N: int, block: int
) -> None:
    mod = _lowered(reshaped_shift_kernel(M, N, block))
    text = mod.script()
    assert "A_local[" not in text and "F[" not in text and "F_2d[" not in text
    a = np.random.default_rng(2).standard_normal((M, N)).astype(np.float32)
    _, out = run_on_host(_main(mod), a, np.full((M, N), 9.0, np.float32))
    shifted = np.zeros_like(a)
    shifted[:-1] = a[1:]
    np.testing.assert_array_equal(out, shifted + np.float32(1.0))


def reshape_fragment_kernel(N: int, M: int) -> Any:
    """TileLang's reshape test: one block, global -> shared -> fragment, a flat view of
    the fragment -> shared -> global."""

    @T.prim_func
    def main(A: T.Tensor((N // M, M), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32) as _:
            A_shared = T.alloc_shared((N // M, M), "float32")
            A_local = T.alloc_fragment((N // M, M), "float32")
            B_shared = T.alloc_shared((N,), "float32")
            T.copy(A, A_shared)
            T.copy(A_shared, A_local)
            A_local_reshape = T.reshape(A_local, [N])
            T.copy(A_local_reshape, B_shared)
            T.copy(B_shared, B)

    return main


def test_a_reshaped_fragment_chain_becomes_one_nest_without_tiles() -> None:
    mod = _lowered(reshape_fragment_kernel(4096, 64))
    text = mod.script()
    for name in ("A_shared", "A_local", "B_shared"):
        assert name not in text, name  # neither used nor allocated
    a = np.random.default_rng(3).standard_normal((64, 64)).astype(np.float32)
    _, out = run_on_host(_main(mod), a, np.zeros(4096, np.float32))
    np.testing.assert_array_equal(out, a.reshape(-1))


def workspace_copy_kernel(n: int, block: int, *, read_in_second_launch: bool = False) -> Any:
    """``T.alloc_global`` as a staging area: each block copies its tile in and back out
    (or, ``read_in_second_launch``, a second kernel launch reads what the first wrote)."""

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        W = T.alloc_global((n,), "float32")
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            T.copy(A[bx * block : (bx + 1) * block], W[bx * block : (bx + 1) * block])
            if not read_in_second_launch:
                T.copy(W[bx * block : (bx + 1) * block], B[bx * block : (bx + 1) * block])
        if read_in_second_launch:
            with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
                T.copy(W[bx * block : (bx + 1) * block], B[bx * block : (bx + 1) * block])

    return main


@pytest.mark.parametrize("n", [256, 250], ids=["full", "ragged"])
def test_a_block_private_workspace_region_becomes_a_forwarded_tile(n: int) -> None:
    mod = _lowered(workspace_copy_kernel(n, 64))
    text = mod.script()
    # No workspace the size of the problem, no staging tile.
    assert "W[" not in text and "W = T.alloc" not in text and "W_tile" not in text
    a = np.random.default_rng(4).standard_normal(n).astype(np.float32)
    _, out = run_on_host(_main(mod), a, np.full(n, 5.0, np.float32))
    np.testing.assert_array_equal(out, a)


def test_a_workspace_read_by_another_launch_stays_a_workspace() -> None:
    text = _lowered(workspace_copy_kernel(256, 64, read_in_second_launch=True)).script()
    assert "W = T.alloc_buffer" in text and "W[" in text


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_workspace_copies_run_on_both_targets(target: str) -> None:
    kernel = tl_jit.compile(workspace_copy_kernel(1000, 64), out_idx=[1], target=target)
    a = np.random.default_rng(5).standard_normal(1000).astype(np.float32)
    np.testing.assert_array_equal(kernel(a), a)


def masked_copy_kernel(M: int, N: int, block: int, *, threshold: int) -> Any:
    """TileLang's mask test: threads ``tx < threshold`` stage the tile (the copy runs
    once when some thread takes the branch)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float16"), B: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=256) as (bx, by):
            A_shared = T.alloc_shared((block, block), "float16")
            tx = T.get_thread_binding(0)
            if tx < threshold:
                T.copy(A[by * block, bx * block], A_shared)
            T.copy(A_shared, B[by * block, bx * block])

    return main


def test_a_thread_mask_some_thread_passes_leaves_no_flag_and_forwards() -> None:
    text = _lowered(masked_copy_kernel(64, 64, 32, threshold=128)).script()
    assert "any_thread" not in text and "A_shared" not in text


def test_a_thread_mask_not_provable_for_an_end_thread_keeps_its_flag() -> None:
    # tx == 100 holds for one thread in the middle: the flag loop stays.
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=256):
            A_shared = T.alloc_shared((64,), "float32")
            tx = T.get_thread_binding(0)
            if tx == 100:
                T.copy(A[0], A_shared)
            T.copy(A_shared, B[0])

    assert "any_thread" in _lowered(main).script()


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_masked_copy_matches_numpy(target: str) -> None:
    kernel = tl_jit.compile(
        masked_copy_kernel(96, 64, 32, threshold=128), out_idx=[1], target=target
    )
    a = np.random.default_rng(6).standard_normal((96, 64)).astype(np.float16)
    np.testing.assert_array_equal(kernel(a), a)


def test_one_block_grids_start_no_thread_team() -> None:
    one_block = reshape_fragment_kernel(1024, 32)
    c_source = lower_to_sources(create_backend_context("c"), one_block).files["kernel.c"]
    assert "#pragma omp" not in c_source
    many = lower_to_sources(create_backend_context("c"), composable_copy_kernel(64, 64, 32))
    assert "#pragma omp parallel for" in many.files["kernel.c"]
    mod = LLVM_PIPELINE.run(kernel_module(one_block, kernel_symbol(one_block)))
    assert "T.parallel" not in mod.script()


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_one_block_reshape_matches_numpy(target: str) -> None:
    kernel = tl_jit.compile(reshape_fragment_kernel(4096, 64), out_idx=[1], target=target)
    a = np.random.default_rng(7).standard_normal((64, 64)).astype(np.float32)
    np.testing.assert_array_equal(kernel(a), a.reshape(-1))


def _flat_loop(extent: int, index: Any) -> tuple[tirx.For, Any]:
    i = tirx.Var("i", "int32")
    src = tirx.decl_buffer((extent,), "float32", name="S")
    dst = tirx.decl_buffer((extent * 4,), "float32", name="D")
    store = tirx.BufferStore(dst, tirx.BufferLoad(src, [i]), [index(i)])
    return tirx.For(
        i, 0, extent, tirx.ForKind.SERIAL, store, annotations={"tl.loop_kind": "parallel"}
    ), i


def test_divmod_loops_split_at_the_smallest_common_divisor_repeatedly() -> None:
    loop, _ = _flat_loop(4096, lambda i: tirx.floordiv(i, 1024) * 2048 + tirx.floormod(i, 32))
    text = str(split_divmod_loops(loop))
    assert text.count("T.serial(") == 3 and "//" not in text and "%" not in text


@pytest.mark.parametrize(
    "index",
    [lambda i: tirx.floordiv(i, 3) + tirx.floormod(i, 2), lambda i: tirx.floormod(i, 48)],
    ids=["coprime", "not-dividing-extent"],
)
def test_divmod_loops_leave_other_loops_alone(index: Any) -> None:
    loop, _ = _flat_loop(64, index)
    assert split_divmod_loops(loop).same_as(loop)


def overwrite_kernel(n: int, block: int, *, reread: bool = False, width: int = 0) -> Any:
    """TileLang's alloc_var_with_initializer: copy into B, then overwrite B's tile
    (``reread``: the overwrite reads B; ``width``: it covers only that many elements)."""
    covered = width or block

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            tmp = T.alloc_var("float32", 5)
            T.copy(A[bx * block : (bx + 1) * block], B[bx * block : (bx + 1) * block])
            for i in T.Parallel(covered):
                if reread:
                    B[bx * block + i] = B[bx * block + i] + tmp
                else:
                    B[bx * block + i] = tmp

    return main


def test_a_copy_overwritten_unread_is_dropped() -> None:
    mod = _lowered(overwrite_kernel(256, 64))
    assert "A[" not in mod.script()
    a = np.random.default_rng(8).standard_normal(256).astype(np.float32)
    _, out = run_on_host(_main(mod), a, np.zeros(256, np.float32))
    np.testing.assert_array_equal(out, np.full(256, 5.0, np.float32))


@pytest.mark.parametrize(
    ("reread", "width"), [(True, 0), (False, 32)], ids=["read-before-overwrite", "half-covered"]
)
def test_a_copy_read_or_not_wholly_overwritten_stays(reread: bool, width: int) -> None:
    mod = _lowered(overwrite_kernel(256, 64, reread=reread, width=width))
    assert "A[" in mod.script()
    a = np.random.default_rng(9).standard_normal(256).astype(np.float32)
    _, out = run_on_host(_main(mod), a, np.zeros(256, np.float32))
    want = a.copy().reshape(4, 64)
    if reread:
        want += np.float32(5.0)
    else:
        want[:, :32] = 5.0
    np.testing.assert_array_equal(out, want.reshape(-1))
