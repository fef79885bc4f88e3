"""Block reductions written the CUDA way (warp shuffles, a shared atomic) on one core,
timed in process CPU time against numpy.

Usage: .venv/bin/python benchmarks/thread_reductions_cpu.py [--targets c llvm] [--repeats 15]

Each kernel reduces every row of a 4096 x 1024 float32 matrix with one block of 256
threads per row, as CUDA kernels do: each thread sums (or maxes) its strided slice
``A[row, k * 256 + tx]``, then the block combines the threads' values:

* ``warp_reduce_sum``: ``T.warp_reduce_sum`` per warp, the first lane of each warp
  stores its partial in shared memory, the first warp reduces the partials with
  ``T.warp_reduce_sum`` again (TileLang's and CUB's block reduction);
* ``warp_reduce_max``: the same with ``T.warp_reduce_max``;
* ``shared_atomic_sum``: every thread ``T.atomic_add``s its sum into one shared
  accumulator.

Each is checked against numpy, then timed against ``A.sum(axis=1)`` /
``A.max(axis=1)`` in the same process (best of ``repeats`` alternating calls, CPU
time as in `thread_gemv_cpu.py`). The figure is **kernel time / numpy time**. These
exercise `warp_lanes` (a warp reduction as one vector tree per group),
`thread_accumulations` (the adds into one shared element as one vector sum) and
lock step over ``A[row, k * 256 + tx]`` (docs/cpu.md, "Threads as SIMD lanes").
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from typing import Any

for _var in ("OMP_NUM_THREADS", "TVM_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402
from thread_gemv_cpu import best_cpu_ms  # noqa: E402

import tl_ir.language as T  # noqa: E402

M, N, THREADS = 4096, 1024, 256
WARPS = THREADS // 32


def warp_reduce_kernel(kind: str) -> Any:
    """One block per row: warp reductions, then the first warp over the warps' partials."""
    reduce = T.warp_reduce_sum if kind == "sum" else T.warp_reduce_max
    identity = 0.0 if kind == "sum" else -math.inf

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M,), "float32")):
        with T.Kernel(M, threads=THREADS) as bx:
            tx = T.get_thread_binding(0)
            partials = T.alloc_shared([WARPS], "float32")
            value = T.alloc_var("float32")
            value = identity
            for k in T.serial(N // THREADS):
                if kind == "sum":
                    value += A[bx, k * THREADS + tx]
                else:
                    value = T.max(value, A[bx, k * THREADS + tx])
            value = reduce(value)
            if T.get_lane_idx() == 0:
                partials[T.get_warp_idx()] = value
            T.sync_threads()
            if tx < 32:
                value = T.if_then_else(tx < WARPS, partials[tx % WARPS], identity)
                value = reduce(value)
                if tx == 0:
                    B[bx] = value

    return main


@T.prim_func
def shared_atomic_sum(A: T.Tensor((M, N), "float32"), B: T.Tensor((M,), "float32")):
    with T.Kernel(M, threads=THREADS) as bx:
        tx = T.get_thread_binding(0)
        acc = T.alloc_shared([1], "float32")
        part = T.alloc_local([1], "float32")
        if tx == 0:
            acc[0] = 0
        T.sync_threads()
        part[0] = 0
        for k in T.serial(N // THREADS):
            part[0] += A[bx, k * THREADS + tx]
        T.atomic_add(acc[0], part[0])
        T.sync_threads()
        if tx == 0:
            B[bx] = acc[0]


def main() -> None:
    """Build, check and time every kernel; print one row per kernel and the geometric means."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--targets", nargs="+", choices=("c", "llvm"), default=("c", "llvm"))
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    import tl_jit
    import tl_runtime

    tl_runtime.set_num_threads(1)
    a = np.random.default_rng(0).standard_normal((M, N)).astype(np.float32)
    kernels: dict[str, tuple[Any, Callable[[], Any]]] = {
        "warp_reduce_sum": (warp_reduce_kernel("sum"), lambda: a.sum(axis=1)),
        "warp_reduce_max": (warp_reduce_kernel("max"), lambda: a.max(axis=1)),
        "shared_atomic_sum": (shared_atomic_sum, lambda: a.sum(axis=1)),
    }
    print(f"load average: {os.getloadavg()}")
    print(f"{'kernel':24s} {'numpy ms':>9s} " + " ".join(f"{t:>7s}" for t in args.targets))
    ratios: dict[str, list[float]] = {t: [] for t in args.targets}
    for name, (func, peer) in kernels.items():
        calls: dict[str, Callable[[], Any]] = {"numpy": peer}
        want = peer()
        for target in args.targets:
            kernel = tl_jit.compile(func, out_idx=[1], target=target)
            np.testing.assert_allclose(kernel(a), want, rtol=1e-4, atol=1e-3)
            calls[target] = lambda k=kernel: k(a)
        best = best_cpu_ms(calls, args.repeats)
        row = f"{name:24s} {best['numpy']:9.3f} "
        for target in args.targets:
            ratio = best[target] / best["numpy"]
            ratios[target].append(ratio)
            row += f"{ratio:7.2f} "
        print(row.rstrip(), flush=True)
    for target, values in ratios.items():
        geomean = math.exp(sum(math.log(v) for v in values) / len(values))
        print(f"{target}: geomean kernel/numpy {geomean:.2f}, worst {max(values):.2f}")
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
