"""The cost of the CPU targets' integer rules: wrapping 32-bit overflow
(`cpu-wrap-integer-overflow`) and saturating float-to-integer conversions
(`cpu-saturate-float-to-int`), A/B in one process.

Usage: OMP_NUM_THREADS=1 .venv/bin/python benchmarks/integer_rules_cpu.py [--n 4194304]
       [--rounds 7]

Three kernels over n elements: an elementwise int32 ``A * B + A - 7``, a
multiplicative hash ``(A * 2654435761 + B) ^ (A >> 7)`` in uint32 (both A/B of the
wrap pass), and an int8 quantization ``int8(A * 127)`` of float32 values in [-1, 1]
(A/B of the saturation pass). Each is built twice for each target: as the pipeline
builds it, and with the pass made the identity. Both are checked against numpy on
inputs where the rule changes nothing, then timed in alternating rounds
(``do_bench``, best of rounds); the figure is **with the rule / without it**.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import numpy as np

os.environ["TL_DISABLE_CACHE"] = "1"  # both variants share a cache key: build each

import tl_jit
import tl_jit.language as T
from tl_codegen_cpu.passes import saturate_float_to_int, wrap_integer_overflow
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


def quantize(n: int) -> Any:
    @T.prim_func
    def quantize(A: T.Tensor((n,), "float32"), C: T.Tensor((n,), "int8")):
        with T.Kernel(n // BLOCK, threads=128) as bx:
            for i in T.Parallel(BLOCK):
                k = bx * BLOCK + i
                C[k] = T.Cast("int8", A[k] * T.float32(127))  # not clamped: saturated

    return quantize


def build_pair(func: Any, target: str, module: Any, function: str) -> tuple[Any, Any]:
    """``func`` compiled as the pipeline builds it, and with ``module.function`` (the
    pass's rewrite) made the identity."""
    with_rule = tl_jit.compile(func, target=target)
    rewrite = getattr(module, function)
    setattr(module, function, lambda stmt, *options: stmt)
    try:
        without_rule = tl_jit.compile(func, target=target)
    finally:
        setattr(module, function, rewrite)
    return with_rule, without_rule


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
    unit = rng.uniform(-1, 1, n).astype(np.float32)
    wrap = (wrap_integer_overflow, "wrap_integer_overflow")
    saturate = (saturate_float_to_int, "saturate_float_to_int")
    cases = {
        "int32 a*b+a-7": (multiply_add(n), small, small[0] * small[1] + small[0] - 7, wrap),
        "uint32 hash": (hash_mix(n), words, hashed, wrap),
        "int8 quantize": (quantize(n), [unit], (unit * np.float32(127)).astype(np.int8), saturate),
    }
    print(f"{'kernel':14} {'target':6} {'rule us':>12} {'no rule us':>12} {'ratio':>6}")
    for name, (func, args, expected, (module, function)) in cases.items():
        for target in ("c", "llvm"):
            kernels = build_pair(func, target, module, function)
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
