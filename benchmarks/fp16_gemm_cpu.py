"""fp16 GEMM (fp32 accumulation) on the CPU: target ``c`` against ``llvm``, one run.

Usage: .venv/bin/python benchmarks/fp16_gemm_cpu.py [--size 512] [--threads 1]
       [--rounds 5] [--reps 5] [--blocks 128x128x32 64x64x64]

The kernel is the fp16 GEMM of TileLang's CPU tests (fp16 shared tiles, an
fp32 fragment accumulator, ``T.gemm``, the result rounded to fp16), compiled
for ``c`` and ``llvm`` through the CPU backend into tl-runtime artifacts and
called through the ``tvm_ffi`` adapter. Both results are checked against
numpy (fp32 math on the fp16 inputs); then both kernels are timed,
alternated in one process (best of ``rounds`` rounds of ``reps`` calls), and
the script prints each target's time and the ratio ``c / llvm`` per block
config (1.0: as fast as llvm; above 1: ``c`` slower).

``--threads`` sets OMP_NUM_THREADS and TVM_NUM_THREADS (the issue's figure is
for one thread); the script re-executes itself once with them set.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench_env import best_seconds, reexec_with_bench_env


def matmul_fp16(M: int, N: int, K: int, block_M: int, block_N: int, block_K: int) -> Any:
    """An fp16 GEMM with fp32 accumulation: ``C = fp16(A @ B)``."""
    import tl_ir.language as T

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        C: T.Tensor((M, N), "float16"),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), "float16")
            B_shared = T.alloc_shared((block_K, block_N), "float16")
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=0):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def main() -> None:
    """Build and check both targets per block config, time them alternated, print ratios."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--blocks", nargs="+", default=("128x128x32", "64x64x64"))
    args = parser.parse_args()
    if args.threads < 1:
        raise SystemExit(f"--threads: expected a positive count, got {args.threads}")
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    os.environ.setdefault("TVM_NUM_THREADS", str(args.threads))
    reexec_with_bench_env(native_openblas=False)

    import numpy as np

    import tl_runtime
    from tl_backend_api import build_artifact, create_backend_context

    n = args.size
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(np.float16)
    b = rng.standard_normal((n, n)).astype(np.float16)
    expected = a.astype(np.float32) @ b.astype(np.float32)
    workdir = Path(tempfile.mkdtemp(prefix="tl-fp16-gemm-bench-"))
    print(
        f"fp16 GEMM {n}^3 (fp32 accumulation); threads: OMP {os.environ['OMP_NUM_THREADS']}, "
        f"TVM {os.environ['TVM_NUM_THREADS']}"
    )
    for block in args.blocks:
        bm, bn, bk = (int(x) for x in block.split("x"))
        kernels: dict[str, Any] = {}
        for target in ("c", "llvm"):
            context = create_backend_context(target)
            artifact = build_artifact(
                context,
                matmul_fp16(n, n, n, bm, bn, bk),
                workdir / f"{target}-{block}",
                out_idx=[-1],
            )
            kernel = tl_runtime.load(artifact)
            got = kernel(a, b).astype(np.float32)
            error = float(np.max(np.abs(got - expected) / (1.0 + np.abs(expected))))
            if error > 2e-2:
                raise SystemExit(f"{target} {block}: wrong result (max scaled error {error})")
            kernels[target] = kernel
        best = dict.fromkeys(kernels, float("inf"))
        for _ in range(args.rounds):
            for target, kernel in kernels.items():
                best[target] = min(
                    best[target], best_seconds(lambda k=kernel: k(a, b), 1, args.reps)
                )
        ratio = best["c"] / best["llvm"]
        print(
            f"block {block:>11}: c {best['c'] * 1e3:8.2f} ms   llvm {best['llvm'] * 1e3:8.2f} ms"
            f"   c/llvm {ratio:5.2f}x"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
