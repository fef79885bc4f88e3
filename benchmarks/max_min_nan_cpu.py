"""The cost of the GPU's NaN rule for float max/min on the CPU targets
(`cpu-max-min-ignore-nan`), A/B in one process.

Usage: OMP_NUM_THREADS=1 .venv/bin/python benchmarks/max_min_nan_cpu.py [--rows 4096]
       [--cols 1024] [--rounds 7]

Three kernels over a rows x cols float32 matrix: a row-wise ``T.reduce_max`` over
fragment tiles, an elementwise ``T.max(A, B) + T.min(A, B)``, and a row softmax
(``reduce_max``, ``exp``, ``reduce_sum``). Each is built twice for each target: as the
pipeline builds it, and as before the rule (`cpu-max-min-ignore-nan` made the
identity, the reduction emitters writing TVM's ``max``: ``a > b ? a : b``). Both are checked against numpy (the NaN-free inputs give equal
results), then timed in alternating rounds (``do_bench``, best of rounds); the figure
is **with rule / without rule**. One thread keeps the figure about the loop, not the
thread team: set OMP_NUM_THREADS=1 for docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

import numpy as np

os.environ["TL_DISABLE_CACHE"] = "1"  # both variants share a cache key: build each

import tl_jit
import tl_jit.language as T
from tl_codegen_cpu.lowering import tile_emitters
from tl_codegen_cpu.passes import max_min_ignore_nan
from tl_jit.profiler import do_bench

BLOCK_ROWS = 8


def row_max(rows: int, cols: int) -> Any:
    @T.prim_func
    def row_max(A: T.Tensor((rows, cols), "float32"), M: T.Tensor((rows,), "float32")):
        with T.Kernel(rows // BLOCK_ROWS, threads=128) as bx:
            tile = T.alloc_fragment((BLOCK_ROWS, cols), "float32")
            best = T.alloc_fragment((BLOCK_ROWS,), "float32")
            T.copy(A[bx * BLOCK_ROWS, 0], tile)
            T.reduce_max(tile, best, dim=1)
            T.copy(best, M[bx * BLOCK_ROWS])

    return row_max


def max_plus_min(rows: int, cols: int) -> Any:
    @T.prim_func
    def max_plus_min(
        A: T.Tensor((rows, cols), "float32"),
        B: T.Tensor((rows, cols), "float32"),
        C: T.Tensor((rows, cols), "float32"),
    ):
        with T.Kernel(rows // BLOCK_ROWS, threads=128) as bx:
            for i, j in T.Parallel(BLOCK_ROWS, cols):
                row = bx * BLOCK_ROWS + i
                C[row, j] = T.max(A[row, j], B[row, j]) + T.min(A[row, j], B[row, j])

    return max_plus_min


def softmax(rows: int, cols: int) -> Any:
    @T.prim_func
    def softmax(A: T.Tensor((rows, cols), "float32"), B: T.Tensor((rows, cols), "float32")):
        with T.Kernel(rows // BLOCK_ROWS, threads=128) as bx:
            tile = T.alloc_fragment((BLOCK_ROWS, cols), "float32")
            best = T.alloc_fragment((BLOCK_ROWS,), "float32")
            total = T.alloc_fragment((BLOCK_ROWS,), "float32")
            T.copy(A[bx * BLOCK_ROWS, 0], tile)
            T.reduce_max(tile, best, dim=1)
            for i, j in T.Parallel(BLOCK_ROWS, cols):
                tile[i, j] = T.exp(tile[i, j] - best[i])
            T.reduce_sum(tile, total, dim=1)
            for i, j in T.Parallel(BLOCK_ROWS, cols):
                B[bx * BLOCK_ROWS + i, j] = tile[i, j] / total[i]

    return softmax


def cases(rows: int, cols: int) -> dict[str, tuple[Any, Callable[..., Any], int]]:
    """Kernel name -> (prim_func, numpy reference of the inputs, number of inputs)."""

    def np_softmax(a: Any) -> Any:
        e = np.exp(a - a.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    return {
        "row reduce_max": (row_max(rows, cols), lambda a: a.max(axis=1), 1),
        "T.max + T.min": (
            max_plus_min(rows, cols),
            lambda a, b: np.maximum(a, b) + np.minimum(a, b),
            2,
        ),
        "softmax": (softmax(rows, cols), np_softmax, 1),
    }


def build_pair(func: Any, target: str) -> tuple[Any, Any]:
    """``func`` compiled with the NaN rule, and as before it: the pass made the identity
    and the reduction emitters writing TVM's ``max``/``min`` (their non-float path)."""
    with_rule = tl_jit.compile(func, target=target)
    rewrite, is_float = max_min_ignore_nan.rewrite_max_min, tile_emitters.is_float
    max_min_ignore_nan.rewrite_max_min = lambda stmt, llvm_intrinsics=False: stmt
    tile_emitters.is_float = lambda dtype: False
    try:
        without_rule = tl_jit.compile(func, target=target)
    finally:
        max_min_ignore_nan.rewrite_max_min, tile_emitters.is_float = rewrite, is_float
    return with_rule, without_rule


def main() -> None:
    """Check and time each kernel and target; print microseconds and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=7)
    options = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'kernel':16} {'target':6} {'with rule us':>13} {'without us':>11} {'ratio':>6}")
    for name, (func, reference, inputs) in cases(options.rows, options.cols).items():
        args = [rng.standard_normal((options.rows, options.cols), np.float32)]
        args += [rng.standard_normal((options.rows, options.cols), np.float32)][: inputs - 1]
        expected = reference(*args)
        for target in ("c", "llvm"):
            kernels = build_pair(func, target)
            outputs = []
            for kernel in kernels:
                out = np.zeros(expected.shape, np.float32)
                kernel(*args, out)
                np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
                outputs.append(out)
            best = [float("inf"), float("inf")]
            for _ in range(options.rounds):
                for index, kernel in enumerate(kernels):
                    call = lambda kernel=kernel, out=outputs[index], args=args: kernel(*args, out)  # noqa: E731
                    best[index] = min(best[index], do_bench(call, warmup=5, rep=50))
            print(
                f"{name:16} {target:6} {best[0] * 1000:13.1f} {best[1] * 1000:11.1f} "
                f"{best[0] / best[1]:6.2f}"
            )


if __name__ == "__main__":
    main()
