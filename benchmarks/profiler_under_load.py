"""The profiler's time for a small CPU GEMM on a machine kept busy by other processes.

Starts one busy process per core (pure Python loops, as another user's job would be),
then times the same kernel in fresh processes (the OpenMP runtime reads its settings
when it loads, so each setting needs its own process):

* ``profiler default``: the Profiler as a user runs it, every core, tl_runtime's default
  thread policy (idle OpenMP workers sleep);
* ``OMP_NUM_THREADS=1``: the peer the issue names, one thread;
* ``spinning workers``: every core with ``GOMP_SPINCOUNT=300000``, libgomp's own
  default, which is what the profiler ran with before tl_runtime set a policy.

Target: ``profiler default`` within 2x of ``OMP_NUM_THREADS=1`` in the same run. The
figures are medians under load and move from run to run; the ratio is what to read.

Run: python benchmarks/profiler_under_load.py [--size 128] [--target c] [--busy N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json, sys
sys.path.insert(0, {examples!r})
import tl_jit
from gemm import matmul
size = {size}
kernel = matmul(size, size, size, 32, 32, 32)
stats = kernel.get_profiler().measure(warmup=50, rep=300, flops=2 * size**3)
import tl_runtime
print(json.dumps({{"median": stats.median_ms, "q1": stats.q1_ms, "q3": stats.q3_ms,
                  "outliers": stats.outliers, "calls": len(stats.samples_ms),
                  "throughput": stats.throughput(), "policy": tl_runtime.thread_policy().detail}}))
"""

BUSY = "import time\nend = time.time() + {seconds}\nwhile time.time() < end:\n    pass\n"


def _child_env(changes: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS"):
        env.pop(name, None)
    env.update(changes)
    return env


def _time(size: int, target: str, changes: dict[str, str]) -> dict[str, object]:
    script = CHILD.format(examples=str(ROOT / "examples"), size=size)
    proc = subprocess.run(
        [sys.executable, "-c", script],
        env=_child_env({**changes, "TL_TARGET": target}),
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        raise SystemExit(f"the timing process failed:\n{proc.stderr}")
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=128, help="M = N = K (default 128)")
    parser.add_argument("--target", default="c", help="c or llvm (default c)")
    parser.add_argument("--busy", type=int, default=os.cpu_count() or 1, help="busy processes")
    args = parser.parse_args()

    print(f"machine: {os.cpu_count()} CPUs; {args.busy} busy processes; GEMM {args.size}^3")
    _time(args.size, args.target, {})  # compile (or load) once, before the load starts
    busy = [
        subprocess.Popen([sys.executable, "-c", BUSY.format(seconds=600)]) for _ in range(args.busy)
    ]
    try:
        time.sleep(1.0)
        rows = [
            ("profiler default", {}),
            ("OMP_NUM_THREADS=1", {"OMP_NUM_THREADS": "1"}),
            ("spinning workers", {"GOMP_SPINCOUNT": "300000"}),
        ]
        results = {name: _time(args.size, args.target, env) for name, env in rows}
    finally:
        for proc in busy:
            proc.kill()
        for proc in busy:
            proc.wait()
    for name, result in results.items():
        print(
            f"  {name:<20} median {result['median']:.4g} ms "
            f"(IQR {result['q1']:.4g} .. {result['q3']:.4g}; {result['calls']} calls, "
            f"{result['outliers']} outliers) {result['throughput']}"
        )
    default = float(results["profiler default"]["median"])  # type: ignore[arg-type]
    single = float(results["OMP_NUM_THREADS=1"]["median"])  # type: ignore[arg-type]
    spinning = float(results["spinning workers"]["median"])  # type: ignore[arg-type]
    print(f"profiler default / OMP_NUM_THREADS=1: {default / single:.2f}x (target: <= 2x)")
    print(f"spinning workers / OMP_NUM_THREADS=1: {spinning / single:.2f}x")
    print(f"policy: {results['profiler default']['policy']}")


if __name__ == "__main__":
    main()
