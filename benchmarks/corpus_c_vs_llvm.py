"""Every TileLang corpus kernel timed on `c` against `llvm`, one process, one run.

Usage: .venv/bin/python benchmarks/corpus_c_vs_llvm.py [--threads 1] [--rounds 5]
       [--limit 1.5] [--only SUBSTRING ...]

The kernels and sizes are those of ``tilelang_corpus_cpu.py`` (its `SIZES`; cases
it does not size run at their own sizes and are marked ``unsized``: their time
is mostly call overhead). Each case that runs on both targets is built for both,
checked against the case's numpy reference, then timed: best of ``rounds``
interleaved rounds of about 20 ms each. The figure is **c time / llvm time**
(above 1: `c` is slower). Cases above ``--limit`` are listed at the end; the
corpus README (``integration_tests/tilelang_compat/README.md``) says why each
one that stays there is slower.

Numbers taken on a shared machine are noisy: rerun a case with ``--only`` before
believing one figure.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_env import best_seconds, reexec_with_bench_env

ROOT = Path(__file__).resolve().parents[1]


def _measure(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(ROOT))
    from tilelang_corpus_cpu import SIZES, _check

    import tl_jit
    import tl_runtime
    from integration_tests.tilelang_compat import registry
    from integration_tests.tilelang_compat.harness import run_kernel

    if args.threads:
        tl_runtime.set_num_threads(args.threads)
    both = {c.name for c in registry.runnable_cases("c")} & {
        c.name for c in registry.runnable_cases("llvm")
    }
    names = [n for n in registry.ALL_CASES if n in both]
    if args.only:
        names = [n for n in names if any(s in n for s in args.only)]
    threads = args.threads or os.cpu_count()
    print(f"threads: {threads}", flush=True)
    print(f"{'kernel':74s} {'c ms':>9s} {'llvm ms':>9s} {'c/llvm':>7s}", flush=True)
    ratios: dict[str, float] = {}
    for name in names:
        case = registry.ALL_CASES[name]
        sizes = SIZES.get(name)
        overrides = sizes or {}
        func, out_idx = case.build(**overrides)
        want = case.expected(case.make_inputs(**overrides), **overrides)
        calls: dict[str, Callable[[], Any]] = {}
        for target in ("c", "llvm"):
            kernel = tl_jit.compile(func, out_idx=out_idx, target=target)
            fresh = case.make_inputs(**overrides)
            _check(case, run_kernel(case, kernel, fresh, out_idx), want)
            calls[target] = lambda k=kernel, xs=fresh: k(*xs)
        once = {key: best_seconds(call, 1, 1, pause=0.0) for key, call in calls.items()}
        best = dict(once)
        rounds = 1 if max(once.values()) > 0.5 else args.rounds
        for _ in range(rounds):
            for key, call in calls.items():
                reps = max(1, min(200, int(0.02 / max(once[key], 1e-7))))
                best[key] = min(best[key], best_seconds(call, 1, reps, pause=0.01))
        ratio = best["c"] / best["llvm"]
        ratios[name] = ratio
        label = name + ("" if sizes else " (unsized)")
        print(
            f"{label:74s} {best['c'] * 1e3:9.3f} {best['llvm'] * 1e3:9.3f} {ratio:7.2f}",
            flush=True,
        )
    if not ratios:
        return
    geomean = math.exp(sum(math.log(v) for v in ratios.values()) / len(ratios))
    above = {n: r for n, r in ratios.items() if r > args.limit}
    print(f"geomean c/llvm {geomean:.2f} over {len(ratios)} kernels", flush=True)
    print(f"above {args.limit}x: {len(above)}", flush=True)
    for name, ratio in sorted(above.items(), key=lambda item: -item[1]):
        print(f"  {ratio:6.2f}  {name}", flush=True)


def main() -> None:
    """Parse the options; measure in a fresh process with the thread setting applied."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=1, help="0 = all cores")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--limit", type=float, default=1.5)
    parser.add_argument("--only", nargs="*", help="only cases whose name contains one of these")
    args = parser.parse_args()
    if args.threads:
        for var in ("OMP_NUM_THREADS", "TVM_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            os.environ.setdefault(var, str(args.threads))
    reexec_with_bench_env()
    _measure(args)


if __name__ == "__main__":
    main()
