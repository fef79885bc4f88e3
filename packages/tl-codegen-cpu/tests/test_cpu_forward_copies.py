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
    # Full-tile nest without guards, partial-tile nest with them.
    assert text.count("T.if_then_else(") == 2 and "else:" in text


@pytest.mark.parametrize(
    "func",
    [add_kernel(40, 24, 16, reread_tile=True), transposed_kernel(24, 8)],
    ids=["tile-reused", "transposed"],
)
def test_tiles_used_otherwise_stay_staged(func: Any) -> None:
    before = _forwarded(func)
    plain = Pipeline("test", (make_pass("cpu-lower-launch"),)).run(tvm.IRModule({"main": func}))
    assert tvm_ffi.structural_equal(before, plain)
    assert _copy_count(before) >= 2


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
