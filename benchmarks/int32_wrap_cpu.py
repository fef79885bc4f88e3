"""The cost of wrapping 32-bit integer overflow on the CPU targets
(`cpu-wrap-integer-overflow`), A/B in one process.

Usage: OMP_NUM_THREADS=1 .venv/bin/python benchmarks/int32_wrap_cpu.py [--n 4194304]
       [--rounds 7]

Two int32 kernels over n elements: an elementwise ``A * B + A - 7`` and a
multiplicative hash ``(A * 2654435761 + B) ^ (A >> 7)`` in uint32. Each is built
twice for each target: as the pipeline builds it, and with the pass made the
identity (C's and LLVM's "cannot overflow" assumption). Both are checked against
numpy on inputs that do not overflow the signed kernel, then timed in alternating
rounds (``do_bench``, best of rounds); the figure is **wrapping / not wrapping**.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import numpy as np

os.environ["TL_DISABLE_CACHE"] = "1"  # both variants share a cache key: build each

import tl_jit
import tl_jit.language as T
from tl_codegen_cpu.passes import wrap_integer_overflow
from tl_jit.profiler import do_bench

BLOCK = 4096


def multiply_add(n: int) -> Any:
    @T.prim_func
    def multiply_add(
        A: T.Tensor((n,), "int32"), B: T.Tensor((n,), "int32"), C: T.Tensor((n,), "int32")
    ):
        with T.Kernel(n // BLOCK, threads=128) as bx:
            for i in T.Parallel(BLOCK):
                k = bx * BLOCK + i
                C[k] = A[k] * B[k] + A[k] - 7

    return multiply_add


def hash_mix(n: int) -> Any:
    @T.prim_func
    def hash_mix(
        A: T.Tensor((n,), "uint32"), B: T.Tensor((n,), "uint32"), C: T.Tensor((n,), "uint32")
    ):
        with T.Kernel(n // BLOCK, threads=128) as bx:
            for i in T.Parallel(BLOCK):
                k = bx * BLOCK + i
                C[k] = (A[k] * T.uint32(2654435761) + B[k]) ^ (A[k] >> T.uint32(7))

    return hash_mix


def build_pair(func: Any, target: str) -> tuple[Any, Any]:
    """``func`` compiled with wrapping overflow, and with the pass made the identity."""
    wrapping = tl_jit.compile(func, target=target)
    rewrite = wrap_integer_overflow.wrap_integer_overflow
    wrap_integer_overflow.wrap_integer_overflow = lambda stmt: stmt
    try:
        assuming = tl_jit.compile(func, target=target)
    finally:
        wrap_integer_overflow.wrap_integer_overflow = rewrite
    return wrapping, assuming


def main() -> None:
    """Check and time each kernel and target; print microseconds and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 22)
    parser.add_argument("--rounds", type=int, default=7)
    options = parser.parse_args()
    n = options.n // BLOCK * BLOCK
    rng = np.random.default_rng(0)
    small = [rng.integers(-30000, 30000, n).astype(np.int32) for _ in range(2)]
    words = [rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32) for _ in range(2)]
    with np.errstate(over="ignore"):
        hashed = (words[0] * np.uint32(2654435761) + words[1]) ^ (words[0] >> np.uint32(7))
    cases = {
        "int32 a*b+a-7": (multiply_add(n), small, small[0] * small[1] + small[0] - 7),
        "uint32 hash": (hash_mix(n), words, hashed),
    }
    print(f"{'kernel':14} {'target':6} {'wrapping us':>12} {'assuming us':>12} {'ratio':>6}")
    for name, (func, args, expected) in cases.items():
        for target in ("c", "llvm"):
            kernels = build_pair(func, target)
            outputs = []
            for kernel in kernels:
                out = np.zeros_like(expected)
                kernel(*args, out)
                np.testing.assert_array_equal(out, expected)
                outputs.append(out)
            best = [float("inf"), float("inf")]
            for _ in range(options.rounds):
                for index, kernel in enumerate(kernels):
                    call = lambda kernel=kernel, out=outputs[index], args=args: kernel(*args, out)  # noqa: E731
                    best[index] = min(best[index], do_bench(call, warmup=5, rep=50))
            print(
                f"{name:14} {target:6} {best[0] * 1000:12.1f} {best[1] * 1000:12.1f} "
                f"{best[0] / best[1]:6.2f}"
            )


if __name__ == "__main__":
    main()
