"""`cpu-forward-copies`: the IR it writes, what it leaves alone, and numerics on partial tiles."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tvm
import tvm_ffi
from cpu_passes_testing import make_pass, run_on_host

import tl_ir.language as T
from tl_codegen_cpu.passes.forward_copies import CpuForwardCopiesPass
from tl_passes import Pipeline

LOWER = ("cpu-lower-launch", "cpu-forward-copies", "cpu-lower-tile-ops")
LOWER += ("cpu-lower-parallel-loops", "cpu-localize-tiles", "simplify")


def add_kernel(M: int, N: int, block: int, *, reread_tile: bool = False) -> Any:
    """``C = A + 2 B`` staged through fragments (``reread_tile``: a second use of B_local)."""

    @T.prim_func
    def main(
        A: T.Tensor((M, N), "float32"),
        B: T.Tensor((M, N), "float32"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=1) as (bx, by):
            A_local = T.alloc_fragment((block, block), "float32")
            B_local = T.alloc_fragment((block, block), "float32")
            T.copy(A[by * block, bx * block], A_local)
            T.copy(B[by * block, bx * block], B_local)
            for i, j in T.Parallel(block, block):
                A_local[i, j] = A_local[i, j] + B_local[i, j] * 2.0
            T.copy(A_local, C[by * block, bx * block])
            if reread_tile:
                T.copy(B_local, A[by * block, bx * block])

    return main


def transposed_kernel(M: int, block: int) -> Any:
    """Reads the staged tile at ``[j, i]``: not elementwise, must stay staged."""

    @T.prim_func
    def main(A: T.Tensor((M, M), "float32"), C: T.Tensor((M, M), "float32")):
        with T.Kernel(T.ceildiv(M, block), T.ceildiv(M, block), threads=1) as (bx, by):
            A_local = T.alloc_fragment((block, block), "float32")
            C_local = T.alloc_fragment((block, block), "float32")
            T.copy(A[by * block, bx * block], A_local)
            for i, j in T.Parallel(block, block):
                C_local[i, j] = A_local[j, i]
            T.copy(C_local, C[by * block, bx * block])

    return main


def _forwarded(func: Any) -> tvm.IRModule:
    passes = tuple(make_pass(n) for n in ("cpu-lower-launch", "cpu-forward-copies"))
    return Pipeline("test", passes).run(tvm.IRModule({"main": func}))


def _copy_count(mod: tvm.IRModule) -> int:
    return mod.script().count("T.copy(")


def test_the_staged_add_becomes_one_nest_over_global_memory() -> None:
    mod = _forwarded(add_kernel(40, 24, 16))
    text = mod.script()
    assert _copy_count(mod) == 0
    assert "C[" in text and "A_local[" not in text and "B_local[" not in text
    # Full-tile nest, and a partial one clipped to the destination: the sources sit
    # where the destination does, so no per-element select is needed.
    assert "else:" in text and "T.if_then_else(" not in text


def staged_chain_kernel(M: int, N: int, block: int, dtype: str = "float32") -> Any:
    """TileLang's staging: global -> shared -> fragment -> (two elementwise stages) ->
    shared -> fragment -> shared -> global, computing ``C = exp(A) * B + 1``."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=1) as (bx, by):
            A_shared = T.alloc_shared((block, block), dtype)
            B_shared = T.alloc_shared((block, block), dtype)
            A_frag = T.alloc_fragment((block, block), "float32")
            B_frag = T.alloc_fragment((block, block), "float32")
            C_frag = T.alloc_fragment((block, block), "float32")
            C_shared = T.alloc_shared((block, block), dtype)
            C_frag2 = T.alloc_fragment((block, block), dtype)
            C_shared2 = T.alloc_shared((block, block), dtype)
            T.copy(A[by * block, bx * block], A_shared)
            T.copy(B[by * block, bx * block], B_shared)
            T.copy(A_shared, A_frag)
            T.copy(B_shared, B_frag)
            for i, j in T.Parallel(block, block):
                C_frag[i, j] = T.exp(A_frag[i, j]) * B_frag[i, j]
            for i, j in T.Parallel(block, block):
                C_frag[i, j] = C_frag[i, j] + 1.0
            T.copy(C_frag, C_shared)
            T.copy(C_shared, C_frag2)
            T.copy(C_frag2, C_shared2)
            T.copy(C_shared2, C[by * block, bx * block])

    return main


STAGING = ("A_shared", "B_shared", "A_frag", "B_frag", "C_frag", "C_shared", "C_frag2")


def _lowered(func: Any) -> tvm.IRModule:
    passes = tuple(make_pass(n) for n in LOWER)
    return Pipeline("test", passes).run(tvm.IRModule({"main": func}), tvm.target.Target("llvm"))


def test_a_long_staging_chain_leaves_no_staging_buffer_in_the_lowered_ir() -> None:
    text = _lowered(staged_chain_kernel(40, 24, 16)).script()
    for name in (*STAGING, "C_shared2"):
        assert f"{name}[" not in text, name
    # One loop nest pair for the whole chain: every element loaded once and stored once.
    assert text.count("C[") == 2


@pytest.mark.parametrize(
    ("M", "N", "block"), [(32, 48, 16), (37, 21, 16), (5, 3, 8)], ids=["full", "ragged", "tiny"]
)
def test_a_long_staging_chain_matches_numpy(M: int, N: int, block: int) -> None:
    func = _lowered(staged_chain_kernel(M, N, block))["main"].with_attr("global_symbol", "main")
    rng = np.random.default_rng(5)
    a = rng.standard_normal((M, N)).astype("float32")
    b = rng.standard_normal((M, N)).astype("float32")
    _, _, out = run_on_host(func, a, b, np.full((M, N), 7.0, dtype="float32"))
    np.testing.assert_allclose(out, np.exp(a) * b + 1, rtol=1e-5, atol=1e-6)


def shifted_kernel(M: int, N: int, block: int) -> Any:
    """``C[r, c] = A[r + 1, c] + B[r, c]`` (A's tile is one row lower: its partial tiles
    must read 0 past A's last row, not what lies beyond)."""

    @T.prim_func
    def main(
        A: T.Tensor((M, N), "float32"),
        B: T.Tensor((M, N), "float32"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=1) as (bx, by):
            A_shared = T.alloc_shared((block, block), "float32")
            B_shared = T.alloc_shared((block, block), "float32")
            C_local = T.alloc_fragment((block, block), "float32")
            T.copy(A[by * block + 1, bx * block], A_shared)
            T.copy(B[by * block, bx * block], B_shared)
            for i, j in T.Parallel(block, block):
                C_local[i, j] = A_shared[i, j] + B_shared[i, j]
            T.copy(C_local, C[by * block, bx * block])

    return main


@pytest.mark.parametrize(("M", "N", "block"), [(32, 32, 16), (37, 21, 16)], ids=["full", "ragged"])
def test_a_source_placed_otherwise_reads_zero_outside_its_buffer(
    M: int, N: int, block: int
) -> None:
    mod = _lowered(shifted_kernel(M, N, block))
    assert "A_shared[" not in mod.script() and "T.if_then_else(" in mod.script()
    func = mod["main"].with_attr("global_symbol", "main")
    rng = np.random.default_rng(7)
    a = rng.standard_normal((M, N)).astype("float32")
    b = rng.standard_normal((M, N)).astype("float32")
    _, _, out = run_on_host(func, a, b, np.zeros((M, N), "float32"))
    shifted = np.zeros_like(a)
    # Row r of a block reads A[r + 1] only while r + 1 < M, else 0 (T.copy's padding).
    shifted[:-1] = a[1:]
    np.testing.assert_array_equal(out, shifted + b)


def test_a_tile_read_twice_is_forwarded_for_each_output() -> None:
    M, N, block = 37, 21, 16
    func = add_kernel(M, N, block, reread_tile=True)
    mod = _lowered(func)
    assert "B_local[" not in mod.script()
    rng = np.random.default_rng(11)
    a = rng.standard_normal((M, N)).astype("float32")
    b = rng.standard_normal((M, N)).astype("float32")
    main = mod["main"].with_attr("global_symbol", "main")
    a_out, _, c_out = run_on_host(main, a, b, np.zeros((M, N), "float32"))
    np.testing.assert_array_equal(c_out, a + b * np.float32(2.0))
    np.testing.assert_array_equal(a_out, b)


def read_after_write_kernel(M: int, block: int) -> Any:
    """Writes A's tile one row up, then reads A's tile again: the second read must see
    the first write, so the chain cannot be evaluated lazily."""

    @T.prim_func
    def main(A: T.Tensor((M, M), "float32"), C: T.Tensor((M, M), "float32")):
        with T.Kernel(1, threads=1) as _:
            L = T.alloc_fragment((block, block), "float32")
            L2 = T.alloc_fragment((block, block), "float32")
            T.copy(A[1, 0], L)
            T.copy(L, A[0, 0])
            T.copy(A[1, 0], L2)
            T.copy(L2, C[0, 0])

    return main


@pytest.mark.parametrize(
    "func",
    [transposed_kernel(24, 8), read_after_write_kernel(16, 8)],
    ids=["transposed", "read-after-write"],
)
def test_chains_that_cannot_be_forwarded_stay_staged(func: Any) -> None:
    before = _forwarded(func)
    plain = Pipeline("test", (make_pass("cpu-lower-launch"),)).run(tvm.IRModule({"main": func}))
    assert tvm_ffi.structural_equal(before, plain)
    assert _copy_count(before) >= 2


def test_read_after_write_keeps_its_meaning() -> None:
    mod = _lowered(read_after_write_kernel(16, 8))
    a = np.arange(256, dtype="float32").reshape(16, 16)
    a_out, c_out = run_on_host(mod["main"].with_attr("global_symbol", "main"), a, np.zeros_like(a))
    want_a = a.copy()
    want_a[0:8, 0:8] = a[1:9, 0:8]
    np.testing.assert_array_equal(a_out, want_a)
    np.testing.assert_array_equal(c_out[0:8, 0:8], want_a[1:9, 0:8])


def test_the_pass_is_registered() -> None:
    assert make_pass("cpu-forward-copies").name == "cpu-forward-copies"
    assert CpuForwardCopiesPass().name == "cpu-forward-copies"


@pytest.mark.parametrize(("M", "N", "block"), [(32, 48, 16), (37, 21, 16)], ids=["full", "partial"])
def test_forwarded_add_matches_numpy_on_full_and_partial_tiles(M: int, N: int, block: int) -> None:
    passes = tuple(make_pass(n) for n in LOWER)
    target = tvm.target.Target("llvm")
    mod = Pipeline("test", passes).run(tvm.IRModule({"main": add_kernel(M, N, block)}), target)
    assert "A_local[" not in mod.script()
    func = mod["main"].with_attr("global_symbol", "main")
    rng = np.random.default_rng(3)
    a = rng.standard_normal((M, N)).astype("float32")
    b = rng.standard_normal((M, N)).astype("float32")
    c = np.full((M, N), 7.0, dtype="float32")
    _, _, out = run_on_host(func, a, b, c)
    np.testing.assert_array_equal(out, a + b * np.float32(2.0))


def legacy_reducer_kernel(extent: int, threads: int) -> Any:
    """TileLang's ``test_finalize_reducer_short_parallel_extent``: a copy into a fragment,
    a cleared legacy reducer read after the run, a ``T.Parallel`` loop adding into it."""

    @T.prim_func
    def main(A: T.Tensor((extent,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((extent,), "float32")
            T.copy(A, src)
            total = T.alloc_reducer((1,), "float32", replication="all")
            T.clear(total)
            for i in T.Parallel(extent):
                total[0] += src[i]
            T.finalize_reducer(total)
            if T.get_thread_binding() == 0:
                B[0] = total[0]

    return main


def test_the_fill_of_a_tile_read_after_the_run_stays() -> None:
    # ``src`` is used by two statements of the run: counted twice, it hid that the
    # reducer had dropped out of the forwarded tiles, and its T.clear went with the
    # chain (the accumulator started uninitialized: NaN on llvm).
    mod = _forwarded(legacy_reducer_kernel(8, 128))
    assert "T.fill(" in mod.script()
