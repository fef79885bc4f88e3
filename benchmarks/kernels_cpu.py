"""Memory-bound kernels on the CPU (softmax, RMS norm, elementwise add) vs numpy, one run.

Usage: .venv/bin/python benchmarks/kernels_cpu.py [--rows 4096] [--cols 1024]
       [--targets c llvm] [--rounds 5] [--reps 20] [--aligned-inputs]

The kernels are the suite's (integration_tests/kernels), compiled through
the CPU backend into tl-runtime artifacts and called through ``tvm_ffi`` on
ordinary numpy arrays (``--aligned-inputs``: on 64-byte aligned copies).
Figures are GB/s of compulsory traffic (each input read once, each output
written once) and the ratio to the numpy expression computing the same
result in the same process (best of ``rounds`` rounds of ``reps`` calls).
The script re-executes itself with TVM_NUM_THREADS set to the core count and
OMP_WAIT_POLICY=passive.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench_env import best_seconds, reexec_with_bench_env

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    """Build each kernel for each target, check it, time it against numpy, print."""
    reexec_with_bench_env(native_openblas=False)
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=1024)
    parser.add_argument("--targets", nargs="+", choices=("c", "llvm"), default=("c", "llvm"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument(
        "--aligned-inputs",
        action="store_true",
        help="place the inputs on 64-byte boundaries (for comparison with ordinary arrays)",
    )
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))

    import numpy as np

    import tl_runtime
    from integration_tests.kernels import load
    from tl_backend_api import build_artifact, create_backend_context

    m, n = args.rows, args.cols
    rng = np.random.default_rng(0)
    # Ordinary numpy inputs (large ones usually start 16 bytes past a 64-byte boundary):
    # kernels declare element alignment, so tl-runtime passes them without a copy.
    x = rng.standard_normal((m, n)).astype(np.float32)
    y = rng.standard_normal((m, n)).astype(np.float32)
    w = rng.standard_normal((n,)).astype(np.float32)
    if args.aligned_inputs:
        from integration_tests.kernels.suite import aligned_copy

        x, y, w = aligned_copy(x), aligned_copy(y), aligned_copy(w)
    offsets = ", ".join(f"{k} {v.ctypes.data % 64}" for k, v in (("x", x), ("y", y), ("w", w)))

    def np_softmax() -> Any:
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def np_rms_norm() -> Any:
        return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6) * w

    elem = 4
    specs = {
        "softmax": ({"M": m, "N": n, "block_M": 8}, (x,), np_softmax, 2 * m * n * elem),
        "rms_norm": ({"M": m, "N": n, "block_M": 8}, (x, w), np_rms_norm, 2 * m * n * elem),
        "elementwise_add": (
            {"M": m, "N": n, "block_M": 8, "block_N": 1024},
            (x, y),
            lambda: x + y,
            3 * m * n * elem,
        ),
    }
    workdir = Path(tempfile.mkdtemp(prefix="tl-kernels-bench-"))
    calls: dict[tuple[str, str], Any] = {}
    for name, (kernel_args, inputs, reference, _traffic) in specs.items():
        module = load(name)
        expected = reference()
        calls[(name, "numpy")] = reference
        for target in args.targets:
            context = create_backend_context(target)
            artifact = build_artifact(
                context,
                module.KERNEL(**kernel_args),
                workdir / f"{name}-{target}",
                out_idx=list(module.OUT_IDX),
            )
            kernel = tl_runtime.load(artifact)
            if not np.allclose(kernel(*inputs), expected, rtol=1e-4, atol=1e-5):
                raise SystemExit(f"{name} on {target}: wrong result")
            calls[(name, target)] = lambda k=kernel, xs=inputs: k(*xs)
    # Rounds interleave every kernel and numpy, so each sees the same machine load.
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(args.rounds):
        for key, call in calls.items():
            best[key] = min(best[key], best_seconds(call, 1, args.reps, pause=0.02))
    print(f"{m} x {n} fp32; cores: {os.cpu_count()}; input bytes past 64 (no copy): {offsets}")
    header = " ".join(f"{t + ' GB/s':>10s} {'ratio':>6s}" for t in args.targets)
    print(f"{'kernel':16s} {'numpy GB/s':>10s} {header}")
    for name, (_args, _inputs, _reference, traffic) in specs.items():
        numpy_s = best[(name, "numpy")]
        row = f"{name:16s} {traffic / numpy_s / 1e9:10.1f} "
        for target in args.targets:
            seconds = best[(name, target)]
            row += f"{traffic / seconds / 1e9:10.1f} {numpy_s / seconds:6.2f} "
        print(row.rstrip())


if __name__ == "__main__":
    main()
