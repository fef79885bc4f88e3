"""The demo's main job: the backend table, then the GEMM of docs/language.md on the CPU.

Prints every backend found through the ``tl.backends`` entry points (target
kinds, execution backends in ``"auto"`` order, availability, plugins that
failed to load); then compiles the tiled fp32 GEMM with ``@tl_jit.jit`` for
the CPU, checks it against numpy and prints its GFLOP/s beside numpy's,
measured in the same run. Options: ``--size N`` (default 1024), ``--target``.

The script re-executes itself once without OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE
(so numpy runs OpenBLAS's native kernel for this CPU) and with
OMP_WAIT_POLICY=passive (idle OpenMP workers sleep instead of spinning on the
cores numpy needs next).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

_REEXEC_FLAG = "TL_DEMO_REEXECED"


def _reexec_clean() -> None:
    if os.environ.get(_REEXEC_FLAG):
        return
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    env.setdefault("OMP_WAIT_POLICY", "passive")
    env[_REEXEC_FLAG] = "1"
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


def backend_table() -> None:
    """Print the backend report and what ``"auto"`` means here."""
    from tl_backend_api import auto_candidates, detect_auto_target_kind, format_backend_report

    print("tl demo: installed backends")
    print()
    print(format_backend_report())
    print()
    kind = detect_auto_target_kind()
    order = ", ".join(f"{b.auto_kind} ({b.name})" for b in auto_candidates())
    print(f'target "auto" on this machine means kind {kind!r} (tried in order: {order})')


def _openblas_description() -> str:
    try:
        import threadpoolctl
    except ImportError:
        return "OpenBLAS kernel unknown (threadpoolctl not installed)"
    infos = [i for i in threadpoolctl.threadpool_info() if i.get("internal_api") == "openblas"]
    if not infos:
        return "numpy does not use OpenBLAS here"
    info = infos[0]
    return f"OpenBLAS {info.get('version')}, core {info.get('architecture')}, {info.get('num_threads')} threads"


def gemm_demo(size: int, target: str) -> int:
    """Compile, check and time the GEMM; returns the exit status."""
    import numpy as np

    import tl_jit
    import tl_jit.language as T

    @tl_jit.jit(out_idx=[-1], target=target)
    def matmul(M, N, K, block_M, block_N, block_K, dtype="float32", accum_dtype="float32"):
        @T.prim_func
        def main(
            A: T.Tensor((M, K), dtype),
            B: T.Tensor((K, N), dtype),
            C: T.Tensor((M, N), dtype),
        ):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
                A_shared = T.alloc_shared((block_M, block_K), dtype)
                B_shared = T.alloc_shared((block_K, block_N), dtype)
                C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
                T.clear(C_local)
                for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                    T.copy(A[by * block_M, ko * block_K], A_shared)
                    T.copy(B[ko * block_K, bx * block_N], B_shared)
                    T.gemm(A_shared, B_shared, C_local)
                T.copy(C_local, C[by * block_M, bx * block_N])

        return main

    print()
    print(f"tl demo: fp32 GEMM {size}x{size}x{size} (docs/language.md), target {target!r}")
    started = time.perf_counter()
    kernel = matmul(size, size, size, 128, 128, 128)
    print(
        f"  compiled (or loaded from the cache) in {time.perf_counter() - started:.2f} s: "
        f"{kernel.manifest.target.get('kind')} via {kernel.runtime_kernel.adapter}"
    )
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    c = kernel(a, b)
    expected = a @ b
    error = float(np.max(np.abs(c - expected)))
    ok = bool(np.allclose(c, expected, rtol=1e-3, atol=1e-3 * size**0.5))
    print(f"  check against numpy: {'OK' if ok else 'MISMATCH'} (max abs error {error:.2e})")
    flops = 2.0 * size**3
    rounds = 5 if size >= 1024 else 20
    kernel_ms = min(
        float(kernel.get_profiler().do_bench(warmup=20, rep=100, return_mode="min"))
        for _ in range(rounds // 5 or 1)
    )
    numpy_ms = float(
        tl_jit.profiler.do_bench(lambda: np.matmul(a, b), warmup=20, rep=100, return_mode="min")
    )
    kernel_gflops, numpy_gflops = flops / kernel_ms / 1e6, flops / numpy_ms / 1e6
    print(f"  tile-language kernel: {kernel_gflops:8.1f} GFLOP/s ({kernel_ms:.2f} ms)")
    print(
        f"  numpy:                {numpy_gflops:8.1f} GFLOP/s ({numpy_ms:.2f} ms; {_openblas_description()})"
    )
    print(f"  ratio kernel/numpy:   {kernel_gflops / numpy_gflops:8.2f}x")
    return 0 if ok else 1


def main() -> int:
    """Backend table, then the GEMM; exit status 1 if the GEMM is wrong."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--target", default="auto")
    parser.add_argument("--backends-only", action="store_true")
    options = parser.parse_args()
    _reexec_clean()
    backend_table()
    if options.backends_only:
        return 0
    return gemm_demo(options.size, options.target)


if __name__ == "__main__":
    raise SystemExit(main())
