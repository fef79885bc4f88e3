"""Wall time of a 32-configuration autotuning search: local executors against Ray.

Run: .venv/bin/python benchmarks/autotune_scaling.py [--configs 32] [--skip-ray]

Tunes a tiled GEMM (target ``c``, 128^3, block sizes 16..128) over ``--configs``
configurations, each search in a fresh cache (no hits), with:

- ``threads``: ``concurrent.futures.ThreadPoolExecutor(2)`` as the executor,
- ``local``: the default executor (2 worker processes, each configuration failing alone;
  the same workers check and time the kernels, one at a time),
- ``local-here``: the same, the kernels checked and timed in this process
  (``isolate_timing=False``): ``local - local-here`` is what isolating the timing costs,
- ``ray-1`` / ``ray-2``: `tl_jit.distributed.RayExecutor` with 1 and 2 tasks in flight on a
  local Ray cluster (``ray.init(num_cpus=2)``; started before the clock, not counted).

On one 2-core machine the Ray rows measure the overhead per configuration Ray adds
(``(ray-2 - local) / configs``); on a cluster the same script with ``--address`` gives
the scaling. Timings under load are noisy: compare rows of one run, not across runs.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import itertools
import os
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import tl_jit
import tl_jit.language as T


@tl_jit.jit(out_idx=[-1], target="c")
def matmul(M: int, N: int, K: int, block_M: int = 64, block_N: int = 64, block_K: int = 32) -> Any:
    """A tiled float32 GEMM (the quickstart's)."""
    dtype = "float32"

    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)
    ) -> None:
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), dtype)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def configs(count: int) -> list[dict[str, int]]:
    """``count`` distinct block-size configurations."""
    sizes = itertools.product((16, 32, 64, 128), (16, 32, 64, 128), (16, 32, 64))
    return [{"block_M": m, "block_N": n, "block_K": k} for m, n, k in sizes][:count]


def search(
    executor: Any, count: int, cache_root: Path, *, isolate_timing: bool | None = None
) -> tuple[float, dict[str, int]]:
    """Wall time of one search in a fresh cache, and its winner."""
    os.environ["TL_CACHE_DIR"] = str(cache_root)
    tuned = tl_jit.autotune(
        configs=configs(count),
        warmup=1,
        rep=5,
        max_workers=2,
        executor=executor,
        cache_results=False,
        isolate_timing=isolate_timing,
    )(matmul)
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        best = tuned(128, 128, 128)
    return time.perf_counter() - started, dict(best.config or {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=32)
    parser.add_argument("--skip-ray", action="store_true")
    parser.add_argument("--address", default=None, help="a Ray cluster (default: a local one)")
    args = parser.parse_args()
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    scratch = Path(tempfile.mkdtemp(prefix="tl-autotune-scaling-"))
    rows: list[tuple[str, float, dict[str, int]]] = []
    with concurrent.futures.ThreadPoolExecutor(2) as threads:
        rows.append(("threads", *search(threads, args.configs, scratch / "threads")))
    rows.append(("local", *search(None, args.configs, scratch / "local")))
    rows.append(("local-here", *search(None, args.configs, scratch / "here", isolate_timing=False)))
    if not args.skip_ray:
        import ray

        from tl_jit.distributed import RayExecutor

        for workers in (1, 2):
            worker_cache = scratch / f"ray-{workers}-workers"
            init: dict[str, Any] = {
                "include_dashboard": False,
                "log_to_driver": False,
                "runtime_env": {"env_vars": {"TL_CACHE_DIR": str(worker_cache)}},
            }
            if args.address is None:
                init["num_cpus"] = 2
            ray.init(address=args.address or "local", **init)
            try:
                executor = RayExecutor(max_workers=workers)
                rows.append(
                    (f"ray-{workers}", *search(executor, args.configs, scratch / f"here-{workers}"))
                )
            finally:
                ray.shutdown()
    local = dict((name, wall) for name, wall, _ in rows)["local"]
    print(f"{args.configs} configurations, GEMM 128^3 on c, {os.cpu_count()} cores")
    print(f"{'executor':<10} {'wall s':>8} {'s/config':>9} {'vs local':>9}  winner")
    for name, wall, winner in rows:
        print(f"{name:<10} {wall:8.1f} {wall / args.configs:9.2f} {wall / local:8.2f}x  {winner}")
    here = dict((name, wall) for name, wall, _ in rows)["local-here"]
    print(
        f"Timing in the workers (local - local-here): {(local - here) / args.configs:+.3f} s "
        "per configuration"
    )
    if "ray-2" in dict((n, w) for n, w, _ in rows):
        ray_two = dict((n, w) for n, w, _ in rows)["ray-2"]
        print(
            f"Ray overhead per configuration (ray-2 - local): {(ray_two - local) / args.configs:+.2f} s"
        )


if __name__ == "__main__":
    main()
