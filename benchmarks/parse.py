# ruff: noqa: F841  (the TIR kernel binds launch vars it does not use)
"""Parse time of the GEMM kernel (integration_tests/kernels/gemm.py) through
``@T.prim_func``, against TVM's own ``tvm.script.tirx.prim_func`` parsing a plain
TIR kernel of similar size in the same run.

Run: ``.venv/bin/python benchmarks/parse.py [--repeat N]``. Prints the median and
the minimum per parse in milliseconds, and the ratio to the TVM baseline.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from tvm.script import tirx as TVM_T  # noqa: E402

from integration_tests.kernels import gemm  # noqa: E402


def plain_tir_kernel(M, N, K):
    """A naive TIR GEMM of similar statement count, parsed by TVM's own entry."""

    @TVM_T.prim_func
    def main(
        A: TVM_T.Buffer((M, K), "float16"),
        B: TVM_T.Buffer((K, N), "float16"),
        C: TVM_T.Buffer((M, N), "float16"),
    ):
        bx = TVM_T.launch_thread("blockIdx.x", N // 128)
        by = TVM_T.launch_thread("blockIdx.y", M // 128)
        tx = TVM_T.launch_thread("threadIdx.x", 128)
        acc = TVM_T.alloc_buffer((128, 128), "float32", scope="local")
        for i, j in TVM_T.grid(128, 128):
            acc[i, j] = TVM_T.float32(0)
        for ko in range(K // 32):
            for i, j, k in TVM_T.grid(128, 128, 32):
                acc[i, j] = acc[i, j] + TVM_T.Cast(
                    "float32", A[by * 128 + i, ko * 32 + k]
                ) * TVM_T.Cast("float32", B[ko * 32 + k, bx * 128 + j])
        for i, j in TVM_T.grid(128, 128):
            C[by * 128 + i, bx * 128 + j] = TVM_T.Cast("float16", acc[i, j])

    return main


def measure(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    start = time.perf_counter()
    gemm.matmul(1024, 1024, 1024, 128, 128, 32)
    first = (time.perf_counter() - start) * 1e3
    plain_tir_kernel(1024, 1024, 1024)
    ours = measure(lambda: gemm.matmul(1024, 1024, 1024, 128, 128, 32), args.repeat)
    base = measure(lambda: plain_tir_kernel(1024, 1024, 1024), args.repeat)
    print(f"first tl_ir GEMM parse (cold):   {first:7.2f} ms")
    print(f"tl_ir GEMM parse  median/min:    {ours[0]:7.2f} / {ours[1]:.2f} ms  (n={args.repeat})")
    print(f"TVM plain TIR GEMM median/min:   {base[0]:7.2f} / {base[1]:.2f} ms  (n={args.repeat})")
    print(f"ratio tl_ir / TVM (median):      {ours[0] / base[0]:7.2f}")


if __name__ == "__main__":
    main()
