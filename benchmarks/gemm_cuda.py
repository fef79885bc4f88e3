"""fp16 GEMM on an NVIDIA GPU: the tile GEMM kernel vs ``torch.matmul``, in TFLOP/s.

Run: .venv/bin/python benchmarks/gemm_cuda.py [--size 4096] [--repeats 20]

Builds ``integration_tests/kernels/gemm.py`` (fp16 in, fp32 accumulate,
64x64x32 tiles, 128 threads) for the device's arch through tl_jit (nvcc
cubin, tl-runtime-cuda's cuda_driver adapter), checks it against torch.matmul,
then times both on the same CUDA tensors with CUDA events and prints
TFLOP/s and the ratio. Needs a CUDA device, cuda-python and torch with CUDA;
without them it prints one "no CUDA device" line and exits 0.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _missing() -> str | None:
    from tl_runtime import adapter_availability

    availability = adapter_availability("cuda_driver")
    if not availability.available:
        return availability.reason
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    return None


def main() -> int:
    """Run the benchmark; returns the process exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    reason = _missing()
    if reason is not None:
        print(f"gemm_cuda: no CUDA device here ({reason}); nothing measured")
        return 0

    import torch

    import tl_jit
    from integration_tests.kernels import load
    from tl_runtime_cuda.driver import Device

    n = args.size
    module = load("gemm")
    func = module.KERNEL(n, n, n, 64, 64, 32)
    kernel = tl_jit.compile(
        func,
        target={"kind": "cuda", "arch": Device.get().arch},
        execution_backend="cubin",
        out_idx=module.OUT_IDX,
    )
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    c = kernel(a, b)
    expected = torch.matmul(a.float(), b.float())
    error = (c.float() - expected).abs().max().item() / expected.abs().max().item()
    print(f"gemm_cuda: {n}^3 fp16, max relative error vs fp32 matmul {error:.2e}")

    def timed(run: Callable[[], object]) -> float:
        for _ in range(3):
            run()
        torch.cuda.synchronize()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(args.repeats):
            run()
        stop.record()
        torch.cuda.synchronize()
        return start.elapsed_time(stop) / 1e3 / args.repeats

    flops = 2.0 * n * n * n
    ours = timed(lambda: kernel(a, b))
    theirs = timed(lambda: torch.matmul(a, b))
    print(f"gemm_cuda: tile GEMM     {flops / ours / 1e12:8.2f} TFLOP/s ({ours * 1e3:.2f} ms)")
    print(f"gemm_cuda: torch.matmul  {flops / theirs / 1e12:8.2f} TFLOP/s ({theirs * 1e3:.2f} ms)")
    print(f"gemm_cuda: ratio ours/torch = {theirs / ours:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
