"""Every TileLang corpus kernel that runs on the CPU, timed against numpy, one run.

Usage: .venv/bin/python benchmarks/tilelang_corpus_cpu.py [--targets c llvm]
       [--threads 1 0] [--rounds 5] [--only SUBSTRING ...]

The kernels are the TileLang programs of ``integration_tests/tilelang_compat``
(``registry.runnable_cases(target)``), built with ``tl_jit.compile`` at the
benchmark sizes of `SIZES` (chosen so numpy needs about a millisecond or more),
checked against the case's numpy reference, then timed against the best numpy
formulation of the same result (`NUMPY`, else the case's reference) in the same
process: best of ``rounds`` interleaved rounds. The figure is **kernel time /
numpy time** (below 1: the kernel is faster), per kernel and target, with the
geometric mean and the worst per target.

``--threads 1 0`` runs the whole measurement twice, each in a fresh process: on
one core (OMP_NUM_THREADS, TVM_NUM_THREADS, OPENBLAS_NUM_THREADS = 1, tl-runtime's
helper pinned to 1) and on all cores (0). Kernels whose sizes are fixed by the
program (a few dozen elements) measure call overhead only: they are printed
but marked ``unsized`` and left out of the mean and the worst; so are cases
`SIZES` does not list (run at the case's own sizes).
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_env import best_seconds, openblas_description, reexec_with_bench_env

ROOT = Path(__file__).resolve().parents[1]

_GEMM_1024 = {"M": 1024, "N": 1024, "K": 1024, "block_M": 128, "block_N": 128, "block_K": 32}

SIZES: dict[str, dict[str, Any] | None] = {
    "kernel_gemm.matmul-f16-nn": _GEMM_1024,
    "kernel_gemm.matmul-f16-tn": _GEMM_1024,
    "kernel_gemm.matmul-f16-nt": _GEMM_1024,
    "kernel_gemm.matmul-f32-f32acc": _GEMM_1024,
    "kernel_gemm_batched.matmul_batched": {**_GEMM_1024, "M": 512, "N": 512, "K": 512, "batch": 8},
    "kernel_gemm_with_stride.matmul": _GEMM_1024,
    "cpu_gemm.matmul": _GEMM_1024,
    "cpu_tgemm.matmul-f32-nn": _GEMM_1024,
    "cpu_tgemm.matmul-f32-tt": _GEMM_1024,
    "language_pipeline.blocksparse_matmul": _GEMM_1024,
    "language_all_of.blocksparse_matmul_global": _GEMM_1024,
    "example_gemv.naive_gemv": {"N": 8192, "K": 4096},
    "example_gemv.naive_splitk_gemv": {"N": 8192, "K": 4096},
    "example_gemv.splitk_gemv": {"N": 8192, "K": 4096},
    "example_gemv.splitk_gemv_vectorized": {"N": 8192, "K": 4096},
    "kernel_gemv_simt.gemv_simt": {"N": 8192, "K": 4096},
    "example_gemv.naive_gemv-f32": {"N": 8192, "K": 4096},
    "example_gemv.naive_splitk_gemv-f32": {"N": 8192, "K": 4096},
    "example_gemv.splitk_gemv-f32": {"N": 8192, "K": 4096},
    "example_gemv.splitk_gemv_vectorized-f32": {"N": 8192, "K": 4096},
    "kernel_gemv_simt.gemv_simt-f32": {"N": 8192, "K": 4096},
    "example_gemv_allreduce.splitk_gemv_vectorized_tvm-f32": {"N": 8192, "K": 4096},
    "example_dequant_gemv_fp16xint4.dequantize_gemv": {"M": 1, "N": 8192, "K": 4096},
    "language_mask_op.tilelang_copy_mask_parallel": {"M": 2048, "N": 2048},
    "language_mask_op.tilelang_copy_mask_copy": {"M": 2048, "N": 2048},
    "language_clear.matmul": _GEMM_1024,
    "language_scan.cumsum_smem_test-dim0": {"M": 2048, "N": 2048, "block_M": 32, "block_N": 32},
    "language_scan.cumsum_fragment_test-dim1-reverse": {
        "M": 2048,
        "N": 2048,
        "block_M": 32,
        "block_N": 32,
    },
    "language_scan.cumsum_smem_test_1d": {"N": 1 << 21, "block_N": 64},
    "language_scan.cumsum_region_test_1d": {"N": 1 << 21, "chunk_size": 64},
    "language_scan.cummax_smem_test": {"M": 2048, "N": 2048},
    "language_scan.cummax_fragment_test": {"M": 2048, "N": 2048},
    "language_clamp.clamp_within_bounds": {"N": 1 << 22, "block_N": 64},
    "language_transpose.tilelang_transpose": {"M": 2048, "N": 2048},
    "language_copy.tilelang_copy": {"M": 2048, "N": 2048, "block_M": 32, "block_N": 32},
    "language_clamp.clamp_value_range": {"N": 1 << 21, "block_N": 64},
    "language_parallel.parallel_elementwise_static": {"length": 1 << 16},
    "language_ternary.tilelang_ternary": {"M": 2048, "N": 2048, "block_M": 32, "block_N": 32},
    "language_if_range.tilelang_if_range": {"M": 2048, "N": 2048, "block_M": 32, "block_N": 32},
    "language_alloc.alloc_var": {"N": 1 << 22, "block_N": 64},
    "language_alloc.alloc_var_add": {"N": 1 << 22, "block_N": 64},
    "language_alloc.alloc_var_with_initializer": {"N": 1 << 22, "block_N": 64},
    "language_alloc.alloc_multi_vars_with_initializer": {"N": 1 << 22, "block_N": 64},
    "language_alloc.alloc_global": {"N": 1 << 22, "block_N": 64},
    "language_atomic.atomic_add_program": {"K": 8, "M": 1024, "N": 1024},
    "language_atomic.atomic_memory_order_program": {"K": 8, "M": 1024, "N": 1024},
    "language_atomic.atomic_addx2_program": {"M": 2048, "N": 2048},
    "language_reshape.reshape_test": {"N": 1 << 16, "M": 256},
    "language_reshape.reshape_fragment_test": {"N": 1 << 16, "M": 256},
    "language_reshape.reduce_after_reshape_test": {"N": 1 << 16, "M": 256},
    "language_view.view_test": {"N": 1 << 16, "M": 256},
    "language_select.get_select_kernel_1": None,
    "language_select.get_parallel_select_kernel": None,
    "language_infinity.get_inf_kernel": None,
    "language_ceildiv._ceildiv_kernel": None,
    "language_ceildiv._align_up_kernel": None,
    "language_composable_index.tilelang_composable_copy": {
        "M": 2048,
        "N": 2048,
        "block_M": 32,
        "block_N": 32,
    },
    "example_rms_norm.rms_norm_splitk": {"M": 4096, "N": 1024, "blk_m": 2, "blk_k": 256},
    "example_rms_norm.rms_norm": {"M": 4096, "N": 1024, "blk_m": 2},
    "example_online_softmax.softmax_kernel": {"M": 4096, "N": 1024},
    "example_topk.tl_topk": {"M": 8192, "N": 64, "topk": 4, "blk_m": 16},
    "example_gemm_splitk.matmul": {**_GEMM_1024, "split_k": 4},
    "example_elementwise_add.elementwise_add": {"M": 2048, "N": 2048},
    "example_gemm_streamk.tl_matmul_streamk": {"M": 1024, "N": 1024, "K": 1024},
    "example_fusedmoe.moe_forward_tilelang_shared": {
        "d_hidden": 1024,
        "d_expert": 512,
        "num_tokens": 512,
    },
    "example_flash_attention.flashattn": {"batch": 1, "heads": 4, "seq_len": 1024},
    "example_flash_attention.flashattn-causal": {"batch": 1, "heads": 4, "seq_len": 1024},
    "example_layernorm._layernorm_fwd": {"N": 4096, "D": 1024},
    "example_gdn_cumsum.tilelang_chunk_local_cumsum_scalar": {"B": 4, "S": 4096, "H": 16},
    "example_gdn_cumsum.tilelang_chunk_local_cumsum_scalar-fragment-reverse": {
        "B": 4,
        "S": 4096,
        "H": 16,
    },
}
"""Benchmark sizes per case (overrides of the case's arguments); None (or absent): the
case's own sizes, reported apart (call overhead only)."""


PEER_DOES_THE_WORK_ONLY = frozenset({"language_clear.matmul"})
"""Cases whose peer performs the program's work but not its (degenerate) result: the
program clears A's tile after loading it, so its output is zero, yet it multiplies."""


def _numpy_formulations() -> dict[str, Callable[..., Any]]:
    """``case name -> (args, *inputs) -> result``: numpy's best way to the same result.

    Cases not listed use their reference. The listed ones replace references written
    for clarity (Python loops over tiles, float64 accumulation, einsum) by what a numpy
    user would write for speed; every output stays within the case's tolerance.
    """
    import numpy as np

    f32 = np.float32

    def gemm(a: dict[str, Any], x: Any, y: Any) -> Any:
        x = x.astype(f32, copy=False)
        y = y.astype(f32, copy=False)
        x = x.T if a.get("trans_A") else x
        y = y.T if a.get("trans_B") else y
        return (x @ y).astype(a.get("out_dtype", a.get("dtype", "float16")), copy=False)

    def blocksparse(a: dict[str, Any], x: Any, y: Any, mask: Any) -> Any:
        # One dense product per K block, masked per output tile.
        bm, bn, bk = a["block_M"], a["block_N"], a["block_K"]
        x32, y32 = x.astype(f32), y.astype(f32)
        out = np.zeros((a["M"], a["N"]), f32)
        tiles = out.reshape(mask.shape[0], bm, mask.shape[1], bn)
        for k in range(mask.shape[2]):
            product = x32[:, k * bk : (k + 1) * bk] @ y32[k * bk : (k + 1) * bk]
            tiles += product.reshape(tiles.shape) * mask[:, None, :, None, k]
        return out.astype(np.float16)

    def blocked_cumsum(a: dict[str, Any], x: Any) -> Any:
        # Only the blocks along the scanned dim matter.
        m, n = x.shape
        if a.get("dim", 0) == 0:
            tiles, axis = x.reshape(m // a["block_M"], a["block_M"], n), 1
        else:
            tiles, axis = x.reshape(m, n // a["block_N"], a["block_N"]), 2
        if a.get("reverse"):
            return np.flip(np.cumsum(np.flip(tiles, axis), axis), axis).reshape(m, n)
        return np.cumsum(tiles, axis).reshape(m, n)

    def blocked_cummax(a: dict[str, Any], x: Any) -> Any:
        m, n = x.shape
        if a.get("dim", 0) == 0:
            tiles, axis = x.reshape(m // a["block_M"], a["block_M"], n), 1
        else:
            tiles, axis = x.reshape(m, n // a["block_N"], a["block_N"]), 2
        if a.get("reverse"):
            flipped = np.flip(tiles, axis)
            return np.flip(np.maximum.accumulate(flipped, axis), axis).reshape(m, n)
        return np.maximum.accumulate(tiles, axis).reshape(m, n)

    def chunked_cumsum_1d(block: str) -> Callable[..., Any]:
        def run(a: dict[str, Any], x: Any) -> Any:
            chunks = x.reshape(-1, a[block])
            if a.get("reverse"):
                return np.flip(np.cumsum(np.flip(chunks, 1), 1), 1).reshape(-1)
            return np.cumsum(chunks, 1).reshape(-1)

        return run

    def clamp_range(a: dict[str, Any], x: Any) -> Any:
        tiles = x.reshape(-1, a["block_N"])
        low = tiles.min(axis=1, keepdims=True) * f32(0.5)
        high = tiles.max(axis=1, keepdims=True) * f32(0.5)
        return np.minimum(np.maximum(tiles, low), high).reshape(x.shape)

    def rms(a: dict[str, Any], x: Any) -> Any:
        return x / np.sqrt(np.einsum("ij,ij->i", x, x)[:, None] / f32(x.shape[1]) + f32(1e-12))

    def softmax(a: dict[str, Any], x: Any) -> Any:
        x32 = x.astype(f32)
        e = np.exp(x32 - x32.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True)).astype(np.float16)

    def topk(a: dict[str, Any], logits: Any) -> Any:
        k = a["topk"]
        part = np.argpartition(-logits, k - 1, axis=1)[:, :k]
        values = np.take_along_axis(logits, part, axis=1)
        order = np.argsort(-values, axis=1)
        return np.take_along_axis(values, order, 1), np.take_along_axis(part, order, 1)

    def summed_slices(a: dict[str, Any], x: Any, b: Any) -> Any:
        # The reference sums in float64; numpy's fast way sums the K slices in float32.
        total = x.sum(axis=0)
        total += b
        return total

    def splitk(a: dict[str, Any], x: Any, y: Any, c: Any) -> Any:
        c += x.astype(f32) @ y.astype(f32)
        return c

    def attention(a: dict[str, Any], q: Any, k: Any, v: Any) -> Any:
        q32, k32, v32 = (t.astype(f32).transpose(0, 2, 1, 3) for t in (q, k, v))
        scores = q32 @ k32.transpose(0, 1, 3, 2) * f32(1.0 / math.sqrt(a["dim"]))
        if a["is_causal"]:
            n = a["seq_len"]
            scores[..., ~np.tril(np.ones((n, n), bool))] = -np.inf
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        return (scores @ v32).transpose(0, 2, 1, 3).astype(np.float16)

    def layernorm(a: dict[str, Any], x: Any, gamma: Any, beta: Any) -> Any:
        mean = x.mean(axis=1)
        centered = x - mean[:, None]
        rstd = 1.0 / np.sqrt(np.einsum("ij,ij->i", centered, centered) / f32(x.shape[1]) + 1e-5)
        return centered * rstd[:, None] * gamma + beta, mean, rstd

    def gdn(a: dict[str, Any], g: Any) -> Any:
        b, s, h = g.shape
        chunks = g.astype(f32).reshape(b, s // a["chunk_size"], a["chunk_size"], h)
        if a.get("reverse"):
            return np.flip(np.cumsum(np.flip(chunks, 2), axis=2), 2).reshape(b, s, h)
        return np.cumsum(chunks, axis=2).reshape(b, s, h)

    def reshape_copy(a: dict[str, Any], x: Any) -> Any:
        return x.reshape(a["N"] // a["M"], a["M"]).copy()

    def flatten_copy(a: dict[str, Any], x: Any) -> Any:
        return x.reshape(-1).copy()

    def moe(a: dict[str, Any], x: Any, w_gate: Any, w_up: Any, w_down: Any, *_: Any) -> Any:
        x32 = x.astype(f32)
        gate = x32 @ w_gate.astype(f32).T
        up = (x32 @ w_up.astype(f32).T) * gate / (1.0 + np.exp(-gate))
        up16 = up.astype(np.float16)
        return up16, (up16.astype(f32) @ w_down.astype(f32).T).astype(np.float16)

    gemm_cases = [
        "kernel_gemm.matmul-f16-nn",
        "kernel_gemm.matmul-f16-tn",
        "kernel_gemm.matmul-f16-nt",
        "kernel_gemm.matmul-f32-f32acc",
        "kernel_gemm_with_stride.matmul",
        "cpu_gemm.matmul",
    ]

    def gemv(a: dict[str, Any], x: Any, w: Any) -> Any:
        return w @ x  # float32: one BLAS sgemv

    def gemv_rows(a: dict[str, Any], x: Any, w: Any, bias: Any, c: Any) -> Any:
        return x @ w.T

    gemv_f32_cases = [
        "example_gemv.naive_gemv-f32",
        "example_gemv.naive_splitk_gemv-f32",
        "example_gemv.splitk_gemv-f32",
        "example_gemv.splitk_gemv_vectorized-f32",
        "example_gemv_allreduce.splitk_gemv_vectorized_tvm-f32",
    ]
    table: dict[str, Callable[..., Any]] = dict.fromkeys(gemm_cases, gemm)
    table.update(dict.fromkeys(gemv_f32_cases, gemv))
    table["kernel_gemv_simt.gemv_simt-f32"] = gemv_rows
    table.update(
        {
            "cpu_tgemm.matmul-f32-nn": lambda a, x, y: gemm({**a, "out_dtype": "float32"}, x, y),
            "cpu_tgemm.matmul-f32-tt": lambda a, x, y: gemm({**a, "out_dtype": "float32"}, x, y),
            # The program clears A's tile after loading it (every product is zero) but still
            # multiplies: its peer is the GEMM it performs.
            "language_clear.matmul": lambda a, x, y: gemm({**a, "trans_B": True}, x, y),
            "language_pipeline.blocksparse_matmul": blocksparse,
            "language_scan.cumsum_smem_test-dim0": blocked_cumsum,
            "language_scan.cumsum_fragment_test-dim1-reverse": blocked_cumsum,
            "language_scan.cumsum_smem_test_1d": chunked_cumsum_1d("block_N"),
            "language_scan.cumsum_region_test_1d": chunked_cumsum_1d("chunk_size"),
            "language_clamp.clamp_value_range": clamp_range,
            "language_reshape.reshape_test": reshape_copy,
            "language_reshape.reshape_fragment_test": flatten_copy,
            "language_view.view_test": reshape_copy,
            "language_composable_index.tilelang_composable_copy": flatten_copy,
            "language_scan.cummax_smem_test": blocked_cummax,
            "language_scan.cummax_fragment_test": blocked_cummax,
            "example_rms_norm.rms_norm_splitk": rms,
            "example_rms_norm.rms_norm": rms,
            "example_online_softmax.softmax_kernel": softmax,
            "example_topk.tl_topk": topk,
            "example_gemm_splitk.matmul": splitk,
            "example_gemm_streamk.tl_matmul_streamk": lambda a, x, w, c: splitk(a, x, w.T, c),
            "language_atomic.atomic_add_program": summed_slices,
            "language_atomic.atomic_memory_order_program": summed_slices,
            # fp16 + fp16 in numpy rounds the float32 sum once, as the reference does.
            "language_atomic.atomic_addx2_program": lambda a, x, b: b + x,
            "example_fusedmoe.moe_forward_tilelang_shared": moe,
            "example_flash_attention.flashattn": attention,
            "example_flash_attention.flashattn-causal": attention,
            "example_layernorm._layernorm_fwd": layernorm,
            "example_gdn_cumsum.tilelang_chunk_local_cumsum_scalar": gdn,
            "example_gdn_cumsum.tilelang_chunk_local_cumsum_scalar-fragment-reverse": gdn,
        }
    )
    return table


def _check(case: Any, got: list[Any], want: list[Any]) -> None:
    """The kernel's outputs match numpy's: elementwise within the case's tolerance, or
    (benchmark sizes make long half-precision sums) normwise within 1e-2.

    Raises:
        SystemExit: a wrong result (names the case and the error).
    """
    import numpy as np

    from integration_tests.tilelang_compat.harness import compare

    try:
        compare(case, got, want)
    except AssertionError:
        for g, w in zip(got, want, strict=True):
            g64, w64 = np.asarray(g, np.float64), np.asarray(w, np.float64)
            error = np.linalg.norm(g64 - w64) / max(float(np.linalg.norm(w64)), 1e-30)
            if not error <= 1e-2:
                raise SystemExit(
                    f"{case.name}: wrong result (normwise error {error:.2e})"
                ) from None


def _measure(args: argparse.Namespace) -> None:
    """One process, one thread setting: build, check and time every runnable case."""
    sys.path.insert(0, str(ROOT))
    import numpy as np

    import tl_jit
    import tl_runtime
    from integration_tests.tilelang_compat import registry
    from integration_tests.tilelang_compat.harness import compare, run_kernel

    if args.threads:
        tl_runtime.set_num_threads(args.threads)
    numpy_table = _numpy_formulations()
    runnable = {t: {c.name for c in registry.runnable_cases(t)} for t in args.targets}
    names = [n for n in registry.ALL_CASES if any(n in runnable[t] for t in args.targets)]
    if args.only:
        names = [n for n in names if any(s in n for s in args.only)]
    threads = args.threads or os.cpu_count()
    print(f"threads: {threads}; numpy: {openblas_description()}", flush=True)
    print(f"{'kernel':66s} {'numpy ms':>9s} " + " ".join(f"{t:>7s}" for t in args.targets))
    ratios: dict[str, dict[str, float]] = {t: {} for t in args.targets}
    for name in names:
        case = registry.ALL_CASES[name]
        # Cases without benchmark sizes (fixed by the program, or not sized here yet) run
        # at their own few-element sizes: call overhead, left out of the aggregates.
        sizes = SIZES.get(name)
        fixed = sizes is None
        overrides = sizes or {}
        func, out_idx = case.build(**overrides)
        inputs = case.make_inputs(**overrides)
        want = case.expected(inputs, **overrides)
        full_args = {**case.args, **overrides}
        peer = numpy_table.get(name, case.reference)
        # The numpy formulation must give the case's result (within its tolerance).
        peer_result = peer(full_args, *[np.array(x, copy=True) for x in inputs])
        peer_list = list(peer_result) if isinstance(peer_result, list | tuple) else [peer_result]
        if name not in PEER_DOES_THE_WORK_ONLY:
            compare(case, peer_list, want)
        calls: dict[str, Callable[[], Any]] = {
            "numpy": lambda p=peer, a=full_args, xs=inputs: p(a, *xs)
        }
        for target in args.targets:
            if name not in runnable[target]:
                continue
            kernel = tl_jit.compile(func, out_idx=out_idx, target=target)
            fresh = case.make_inputs(**overrides)
            _check(case, run_kernel(case, kernel, fresh, out_idx), want)
            calls[target] = lambda k=kernel, xs=fresh: k(*xs)
        # One warm-up call each (caches, pages, thread pools) sizes the repetitions:
        # about 20 ms per round, and a single round for calls over half a second.
        once = {key: best_seconds(call, 1, 1, pause=0.0) for key, call in calls.items()}
        best = dict(once)
        rounds = 1 if max(once.values()) > 0.5 else args.rounds
        for _ in range(rounds):
            for key, call in calls.items():
                reps = max(1, min(200, int(0.02 / max(once[key], 1e-7))))
                best[key] = min(best[key], best_seconds(call, 1, reps, pause=0.01))
        row = f"{name + (' (unsized)' if fixed else ''):66s} {best['numpy'] * 1e3:9.3f} "
        for target in args.targets:
            if target not in best:
                row += f"{'-':>7s} "
                continue
            ratio = best[target] / best["numpy"]
            if not fixed:
                ratios[target][name] = ratio
            row += f"{ratio:7.2f} "
        print(row.rstrip(), flush=True)
    for target in args.targets:
        values = ratios[target]
        if not values:
            continue
        geomean = math.exp(sum(math.log(v) for v in values.values()) / len(values))
        worst = max(values, key=values.__getitem__)
        print(
            f"{target}: threads {threads}: geomean kernel/numpy {geomean:.2f} over {len(values)}"
            f" kernels; worst {values[worst]:.2f} ({worst})",
            flush=True,
        )


def main() -> None:
    """Parse the options; measure in one fresh process per thread setting."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--targets", nargs="+", choices=("c", "llvm"), default=("c", "llvm"))
    parser.add_argument(
        "--threads",
        nargs="+",
        type=int,
        default=(1, 0),
        help="thread settings to measure, each in its own process (0 = all cores)",
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", nargs="*", help="only cases whose name contains one of these")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        reexec_with_bench_env()
        args.threads = args.threads[0]
        _measure(args)
        return
    for threads in args.threads:
        env = dict(os.environ)
        if threads:
            for var in ("OMP_NUM_THREADS", "TVM_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
                env[var] = str(threads)
        command = [sys.executable, __file__, "--child", "--threads", str(threads)]
        command += ["--targets", *args.targets, "--rounds", str(args.rounds)]
        if args.only:
            command += ["--only", *args.only]
        done = subprocess.run(command, env=env, check=False)
        if done.returncode:
            raise SystemExit(done.returncode)


if __name__ == "__main__":
    main()
