"""TileLang's thread-indexed GEMVs on one core, timed in process CPU time against numpy.

Usage: .venv/bin/python benchmarks/thread_gemv_cpu.py [--targets c llvm] [--repeats 15]
       [--cases NAME ...]

The programs are the float32 GEMV cases of ``integration_tests/tilelang_compat``
(``cases_thread_indexed.py``: naive, naive split-K, split-K, vectorized split-K, the
vectorized split-K whose threads meet in ``tvm_thread_allreduce``, and the SIMT GEMV of
TileLang's kernel tests) at N = 8192, K = 4096, each built with
``tl_jit.compile``, checked against float64 numpy, then timed against numpy's ``B @ A``
(one OpenBLAS sgemv) in the same process: best of ``repeats`` calls each, numpy and
the kernels alternating call by call (so each ratio compares calls made under the
same load). The figure is
**kernel time / numpy time**.

Why CPU time (``time.process_time``): the corpus benchmark
(`tilelang_corpus_cpu.py`) takes wall-clock time, which on a shared, loaded machine
swings by 3x between rounds (numpy's own sgemv measured 3.8-19 ms there); a process's
CPU time leaves out the time other processes hold its core. Everything runs on one
thread (OMP_NUM_THREADS, TVM_NUM_THREADS, OPENBLAS_NUM_THREADS = 1, set before the
libraries start), so CPU time is the kernel's time on its core.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

for _var in ("OMP_NUM_THREADS", "TVM_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = "1"

ROOT = Path(__file__).resolve().parents[1]
SIZES = {"N": 8192, "K": 4096}
CASES = (
    "example_gemv.naive_gemv-f32",
    "example_gemv.naive_splitk_gemv-f32",
    "example_gemv.splitk_gemv-f32",
    "example_gemv.splitk_gemv_vectorized-f32",
    "example_gemv_allreduce.splitk_gemv_vectorized_tvm-f32",
    "kernel_gemv_simt.gemv_simt-f32",
)


def best_cpu_ms(calls: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """The smallest process CPU time of each call over ``repeats`` rounds (after one
    warm-up each), in ms. The calls alternate within a round, so a kernel and its
    numpy peer are timed under the same load (a shared machine's memory bandwidth
    changes from second to second)."""
    for call in calls.values():
        call()
    best = dict.fromkeys(calls, math.inf)
    for _ in range(repeats):
        for name, call in calls.items():
            start = time.process_time()
            call()
            best[name] = min(best[name], time.process_time() - start)
    return {name: value * 1e3 for name, value in best.items()}


def main() -> None:
    """Build, check and time every case; print one row per case and the geometric means."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--targets", nargs="+", choices=("c", "llvm"), default=("c", "llvm"))
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument(
        "--cases", nargs="+", choices=CASES, default=CASES, help="a subset of the cases"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import tl_jit
    import tl_runtime
    from integration_tests.tilelang_compat import registry
    from integration_tests.tilelang_compat.harness import compare, run_kernel

    tl_runtime.set_num_threads(1)
    print(f"load average: {os.getloadavg()}")
    print(f"{'kernel':56s} {'numpy ms':>9s} " + " ".join(f"{t:>7s}" for t in args.targets))
    ratios: dict[str, list[float]] = {t: [] for t in args.targets}
    for name in args.cases:
        case = registry.ALL_CASES[name]
        func, out_idx = case.build(**SIZES)
        inputs = case.make_inputs(**SIZES)
        want = case.expected(inputs, **SIZES)
        x, w = inputs[0], inputs[1]
        if "simt" in name:
            peer: Callable[[], Any] = lambda x=x, w=w: x @ w.T  # noqa: E731
        else:
            peer = lambda x=x, w=w: w @ x  # noqa: E731
        calls: dict[str, Callable[[], Any]] = {"numpy": peer}
        for target in args.targets:
            kernel = tl_jit.compile(func, out_idx=out_idx, target=target)
            fresh = case.make_inputs(**SIZES)
            compare(case, run_kernel(case, kernel, fresh, out_idx), want)
            calls[target] = lambda k=kernel, xs=fresh: k(*xs)
        best = best_cpu_ms(calls, args.repeats)
        row = f"{name:56s} {best['numpy']:9.3f} "
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
