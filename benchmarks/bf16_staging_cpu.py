"""A GEMM staging its operands through bfloat16 shared tiles on the CPU targets: the
cost of rounding each conversion to bfloat16 (`cpu-round-bfloat16`).

Usage: .venv/bin/python benchmarks/bf16_staging_cpu.py [--size 256]

The kernel copies 64x32 / 32x64 tiles of A and B into bfloat16 shared tiles and
accumulates ``T.gemm`` into a float32 fragment; A and B are float32 (each copy
converts, and rounds, to bfloat16) or already bfloat16 (no conversion). Each kernel
is checked against numpy on the bfloat16-rounded operands, then timed with
``do_bench`` (one thread: set OMP_NUM_THREADS=1 for the figures in
docs/performance.md). Run it from another tree's packages (PYTHONPATH) for an A/B.
"""

from __future__ import annotations

import argparse
from typing import Any

import ml_dtypes
import numpy as np

import tl_jit
import tl_jit.language as T
from tl_jit.profiler import do_bench


def build(target: str, source: str, size: int) -> Any:
    """The staged GEMM for ``target`` with operands of dtype ``source``."""

    @T.prim_func
    def staged_gemm(
        A: T.Tensor((size, size), source),
        B: T.Tensor((size, size), source),
        C: T.Tensor((size, size), "float32"),
    ):
        with T.Kernel(size // 64, size // 64, threads=128) as (bx, by):
            As = T.alloc_shared((64, 32), "bfloat16")
            Bs = T.alloc_shared((32, 64), "bfloat16")
            Cl = T.alloc_fragment((64, 64), "float32")
            T.clear(Cl)
            for ko in T.Pipelined(size // 32, num_stages=1):
                T.copy(A[by * 64, ko * 32], As)
                T.copy(B[ko * 32, bx * 64], Bs)
                T.gemm(As, Bs, Cl)
            T.copy(Cl, C[by * 64, bx * 64])

    return tl_jit.compile(staged_gemm, target=target)


def main() -> None:
    """Check and time each target and operand dtype; print microseconds per call."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256)
    size = parser.parse_args().size
    rng = np.random.default_rng(0)
    for target in ("c", "llvm"):
        for source in ("float32", "bfloat16"):
            kernel = build(target, source, size)
            dtype = np.float32 if source == "float32" else ml_dtypes.bfloat16
            a = rng.standard_normal((size, size)).astype(dtype)
            c = np.zeros((size, size), np.float32)
            kernel(a, a, c)
            rounded = a.astype(ml_dtypes.bfloat16).astype(np.float32)
            np.testing.assert_allclose(c, rounded @ rounded, rtol=1e-3, atol=1e-2)
            best = do_bench(lambda kernel=kernel, a=a, c=c: kernel(a, a, c), warmup=20, rep=200)
            print(f"{target:5} {source:9} -> bfloat16 tiles: {best * 1000:8.1f} us")


if __name__ == "__main__":
    main()
