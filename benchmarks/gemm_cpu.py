"""The GEMM kernel of docs/language.md (fp32) compiled for c and llvm vs numpy.matmul, one run.

Usage: .venv/bin/python benchmarks/gemm_cpu.py [--size 1024] [--rounds 5] [--reps 10]
       [--targets c llvm] [--blocks 128x128x128 128x128x64 64x128x128]
       [--aligned-inputs]

The kernel is written with ``tl_ir.language`` exactly as a user writes it
(shared A/B tiles, a fragment accumulator, ``T.Pipelined`` over k,
``T.gemm``), compiled through the CPU backend's pipeline into a tl-runtime
artifact and called through the ``tvm_ffi`` adapter. Every block config is
measured; the best one per target is compared with numpy.matmul in the same
process (best of ``rounds`` rounds of ``reps`` calls, alternated). A and B
are ordinary numpy arrays, passed to the kernel without a copy (its params
declare element alignment); ``--aligned-inputs`` places them on 64-byte
boundaries instead, for comparison.

The script re-executes itself with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE
removed from the environment (numpy then runs OpenBLAS's native kernel for
this CPU; threadpoolctl says which), TVM_NUM_THREADS set to the core count
and OMP_WAIT_POLICY=passive (idle OpenMP workers sleep instead of spinning
on the cores OpenBLAS needs next).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench_env import best_seconds, openblas_description, reexec_with_bench_env


def matmul(M: int, N: int, K: int, block_M: int, block_N: int, block_K: int) -> Any:
    """The GEMM kernel of docs/language.md, fp32 in and out."""
    import tl_ir.language as T

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float32"),
        B: T.Tensor((K, N), "float32"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), "float32")
            B_shared = T.alloc_shared((block_K, block_N), "float32")
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def main() -> None:
    """Build, check and time every (target, block) config; print GFLOP/s and ratios."""
    reexec_with_bench_env()
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--targets", nargs="+", choices=("c", "llvm"), default=("c", "llvm"))
    parser.add_argument("--blocks", nargs="+", default=("128x128x128", "128x128x64", "64x128x128"))
    parser.add_argument(
        "--aligned-inputs",
        action="store_true",
        help="place A and B on 64-byte boundaries (for comparison with ordinary arrays)",
    )
    args = parser.parse_args()

    import numpy as np

    import tl_runtime
    from tl_backend_api import build_artifact, create_backend_context

    n = args.size
    flops = 2.0 * n * n * n
    rng = np.random.default_rng(0)
    # Ordinary numpy inputs, as users pass them: the kernel's params declare element
    # alignment, so tl-runtime hands them to the kernel without a copy.
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    if args.aligned_inputs:
        # The suite helpers live with the suite's kernels, in the repository's tests.
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from integration_tests.kernels.suite import aligned_copy

        a, b = aligned_copy(a), aligned_copy(b)
    expected = a @ b
    print(f"fp32 GEMM {n}^3; numpy: {openblas_description()}; cores: {os.cpu_count()}")
    print(f"input offsets past a 64-byte boundary: a {a.ctypes.data % 64}, b {b.ctypes.data % 64}")
    workdir = Path(tempfile.mkdtemp(prefix="tl-gemm-bench-"))
    kernels: dict[tuple[str, str], Any] = {}
    for target in args.targets:
        context = create_backend_context(target)
        for block in args.blocks:
            bm, bn, bk = (int(x) for x in block.split("x"))
            artifact = build_artifact(
                context, matmul(n, n, n, bm, bn, bk), workdir / f"{target}-{block}", out_idx=[-1]
            )
            kernel = tl_runtime.load(artifact)
            c = kernel(a, b)
            error = float(np.max(np.abs(c - expected)))
            if error > 1e-2:
                raise SystemExit(f"{target} {block}: wrong result (max abs error {error})")
            kernels[(target, block)] = kernel
    # Rounds interleave every config and numpy, so each sees the same machine load;
    # the best round of each counts.
    calls: dict[Any, Any] = {key: (lambda k=kernel: k(a, b)) for key, kernel in kernels.items()}
    calls["numpy"] = lambda: np.matmul(a, b)
    best: dict[Any, float] = dict.fromkeys(calls, float("inf"))
    for _ in range(args.rounds):
        for key, call in calls.items():
            best[key] = min(best[key], best_seconds(call, 1, args.reps))
    numpy_best = best.pop("numpy")
    results: dict[tuple[str, str], float] = best
    print(f"numpy.matmul: {flops / numpy_best / 1e9:.1f} GFLOP/s")
    for target in args.targets:
        for block in args.blocks:
            seconds = results[(target, block)]
            print(
                f"  {target:4s} block {block:12s} {flops / seconds / 1e9:7.1f} GFLOP/s "
                f"({numpy_best / seconds:.2f}x numpy)"
            )
        best_block = min(args.blocks, key=lambda blk: results[(target, blk)])
        ratio = numpy_best / results[(target, best_block)]
        print(f"best {target}: block {best_block}, {ratio:.2f}x numpy")


if __name__ == "__main__":
    main()
