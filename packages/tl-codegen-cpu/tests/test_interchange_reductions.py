"""`cpu-interchange-reductions`: scalar GEMM loops reordered, results bit-identical."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tvm
import tvm_ffi
from cpu_passes_testing import make_pass, run_on_host

import tl_ir.language as T
from tl_codegen_cpu.passes.interchange_reductions import CpuInterchangeReductionsPass
from tl_passes import Pipeline

BEFORE = ("cpu-lower-launch", "cpu-forward-copies")
AFTER = ("cpu-lower-tile-ops", "cpu-lower-parallel-loops", "cpu-localize-tiles")
AFTER += ("cpu-legalize-half-precision", "simplify")


def grid_gemm(M: int, N: int, K: int, block: int, dtype: str, halve_index: bool = False) -> Any:
    """TileLang's CPU test GEMM: ``for i, j, k in T.grid: C[i, j] += A[i, k] * B[k, j]``
    (``halve_index``: stores ``C[i, j // 2]``, two j per element: must stay as it is)."""

    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), "float32")
    ):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block)) as (bx, by):
            A_local = T.alloc_local((block, block), dtype)
            B_local = T.alloc_local((block, block), dtype)
            C_local = T.alloc_local((block, block), "float32")
            T.clear(C_local)
            for ko in T.Pipelined(K // block, num_stages=0):
                T.copy(A[by * block, ko * block], A_local)
                T.copy(B[ko * block, bx * block], B_local)
                for i, j, k in T.grid(block, block, block):
                    if halve_index:
                        C_local[i, j // 2] += A_local[i, k] * B_local[k, j]
                    else:
                        C_local[i, j] += A_local[i, k] * B_local[k, j]
            T.copy(C_local, C[by * block, bx * block])

    return main


def _lower(func: Any, interchange: bool) -> tvm.IRModule:
    passes = [make_pass(n) for n in BEFORE]
    if interchange:
        passes.append(CpuInterchangeReductionsPass())
    passes += [make_pass(n) for n in AFTER]
    return Pipeline("test", tuple(passes)).run(
        tvm.IRModule({"main": func}), tvm.target.Target("llvm")
    )


def test_the_reduction_loop_moves_outermost_and_the_row_loop_vectorizes() -> None:
    func = grid_gemm(32, 32, 32, 16, "float32")
    passes = (*[make_pass(n) for n in BEFORE], CpuInterchangeReductionsPass())
    text = Pipeline("test", passes).run(tvm.IRModule({"main": func})).script()
    assert "for k, i in T.grid(16, 16):" in text
    assert 'for j in T.serial(16, annotations={"tl.loop_kind": "parallel"}):' in text
    assert "T.vectorized(16)" in _lower(func, interchange=True).script()


def test_a_store_that_merges_iterations_is_left_alone() -> None:
    func = grid_gemm(32, 32, 32, 16, "float32", halve_index=True)
    passes = tuple(make_pass(n) for n in BEFORE)
    plain = Pipeline("test", passes).run(tvm.IRModule({"main": func}))
    moved = Pipeline("test", (*passes, CpuInterchangeReductionsPass())).run(
        tvm.IRModule({"main": func})
    )
    assert tvm_ffi.structural_equal(plain, moved)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_results_are_bit_identical_to_the_original_order(dtype: str) -> None:
    M = N = K = 32
    rng = np.random.default_rng(3)
    a = rng.standard_normal((M, K)).astype(dtype)
    b = rng.standard_normal((K, N)).astype(dtype)
    results = []
    for interchange in (False, True):
        mod = _lower(grid_gemm(M, N, K, 16, dtype), interchange)
        func = mod["main"].with_attr("global_symbol", "main")
        results.append(run_on_host(func, a, b, np.zeros((M, N), "float32"))[2])
    np.testing.assert_array_equal(results[0], results[1])
    # fp16 products are rounded to fp16 before the fp32 sum, as the program says.
    want = np.zeros((M, N), np.float32)
    for k in range(K):
        want += (a[:, k : k + 1] * b[k : k + 1, :]).astype(np.float32)
    np.testing.assert_allclose(results[1], want, rtol=1e-5, atol=1e-5)
