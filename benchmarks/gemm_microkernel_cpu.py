"""fp32 tile GEMM on the CPU (hand-built TIR + the CPU backend's micro-kernel) vs numpy, one run.

Usage: .venv/bin/python benchmarks/gemm_microkernel_cpu.py [--size 1024] [--block 128 128 128]
       [--register-tile 8 32] [--rounds 7] [--targets llvm c] [--transpose-a] [--transpose-b]

``llvm`` builds in process with ``tvm.compile`` (mcpu = the host CPU's name);
``c`` goes through tl_codegen_cpu.build_c (TVM's C + the GCC vector-extension
micro-kernel, ``#pragma omp parallel for``, gcc -O3 -march=native -fopenmp)
and loads the .so with ``tvm.runtime.load_module``.

The script re-executes itself with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE
removed from the environment, so numpy runs OpenBLAS's native kernel for this
CPU, and with TVM_NUM_THREADS set to the core count: TVM's thread pool
otherwise starts one worker on this 2-core machine. It prints which OpenBLAS
kernel ran (threadpoolctl), both GFLOP/s figures and their ratio.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from bench_env import openblas_description, reexec_with_bench_env


def _best_seconds(fn: object, reps: int) -> float:
    call = fn  # a zero-argument callable
    start = time.perf_counter()
    for _ in range(reps):
        call()  # type: ignore[operator]
    return (time.perf_counter() - start) / reps


def main() -> None:
    """Parse the options, build and check the kernels, print the figures."""
    reexec_with_bench_env()
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--block", type=int, nargs=3, default=(128, 128, 128))
    parser.add_argument("--register-tile", type=int, nargs=2, default=None)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--transpose-a", action="store_true")
    parser.add_argument("--transpose-b", action="store_true")
    parser.add_argument("--targets", nargs="+", choices=("llvm", "c"), default=("llvm", "c"))
    args = parser.parse_args()

    import numpy as np
    import tvm

    from tl_codegen_cpu.lowering import (
        RegisterTile,
        choose_register_tile,
        host_cpu_name,
        vector_isa_for_target,
    )

    # The hand-built GEMM is a test fixture of the CPU backend's tests.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "packages/tl-codegen-cpu/tests"))
    from cpu_reference_kernels import tile_gemm_prim_func

    size = args.size
    mcpu = host_cpu_name()
    target = tvm.target.Target({"kind": "llvm", "mcpu": mcpu})
    isa = vector_isa_for_target(target)
    register_tile = RegisterTile(*args.register_tile) if args.register_tile else None

    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    reference = a @ b
    a_dev = tvm.runtime.tensor(np.ascontiguousarray(a.T) if args.transpose_a else a)
    b_dev = tvm.runtime.tensor(np.ascontiguousarray(b.T) if args.transpose_b else b)
    c_dev = tvm.runtime.tensor(np.zeros((size, size), np.float32))

    kernels = {}
    for kind in args.targets:
        style = "c-vector-extension" if kind == "c" else "tir"
        func = tile_gemm_prim_func(
            size,
            size,
            size,
            *args.block,
            isa=isa,
            register_tile=register_tile,
            style=style,
            transpose_a=args.transpose_a,
            transpose_b=args.transpose_b,
        )
        start = time.perf_counter()
        if kind == "llvm":
            kernel = tvm.compile(func, target=target)["main"]
        else:
            from tl_codegen_cpu import build_c, prepare_for_c

            out_dir = tempfile.mkdtemp(prefix="tl-gemm-c-")
            built = build_c(prepare_for_c(tvm.IRModule({"main": func})), out_dir, name="gemm")
            kernel = tvm.runtime.load_module(str(built.library_path))["main"]
        compile_ms = (time.perf_counter() - start) * 1e3
        kernel(a_dev, b_dev, c_dev)
        error = float(np.abs(c_dev.numpy() - reference).max())
        if not np.allclose(c_dev.numpy(), reference, rtol=1e-3, atol=1e-2):
            raise SystemExit(f"{kind}: wrong result, max abs error {error}")
        kernels[kind] = (kernel, compile_ms, error)

    # Alternate numpy and the kernels so all see the same machine state; keep each
    # one's best. The pause lets the other library's idle workers stop spinning
    # (OpenBLAS and TVM's pool both busy-wait a while after a call).
    best = dict.fromkeys(["numpy", *kernels], float("inf"))
    calls = {"numpy": lambda: a @ b}
    for kind, (kernel, _, _) in kernels.items():
        calls[kind] = lambda kernel=kernel: kernel(a_dev, b_dev, c_dev)
    for _ in range(args.rounds):
        for label, call in calls.items():
            time.sleep(0.2)
            call()
            best[label] = min(best[label], _best_seconds(call, args.reps))
    flop = 2.0 * size**3
    gflops = {label: flop / seconds / 1e9 for label, seconds in best.items()}
    print(f"machine: {os.cpu_count()} cores, llvm mcpu={mcpu}, {isa}")
    print(f"numpy: {openblas_description()}")
    print(
        f"TVM_NUM_THREADS={os.environ.get('TVM_NUM_THREADS')} "
        f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}"
    )
    print(
        f"kernel: fp32 {size}^3, transpose_a={args.transpose_a}, transpose_b={args.transpose_b}, "
        f"block {tuple(args.block)}, register tile "
        f"{register_tile or choose_register_tile(*args.block[:2], 'float32', isa)}"
    )
    print(f"numpy.matmul          {gflops['numpy']:7.1f} GFLOP/s")
    for kind, (_, compile_ms, error) in kernels.items():
        print(
            f"tile GEMM ({kind:4s})      {gflops[kind]:7.1f} GFLOP/s  "
            f"ratio {gflops[kind] / gflops['numpy']:.2f}x numpy (target >= 0.80x)  "
            f"[compile {compile_ms:.0f} ms, max abs err {error:.1e}]"
        )


if __name__ == "__main__":
    main()
