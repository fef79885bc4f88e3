"""What timing a configuration in a worker process costs against timing it here.

Run: .venv/bin/python benchmarks/autotune_timing_isolation.py [--tasks 40]

Builds one configuration of `autotune_scaling`'s GEMM (target ``c``, 128^3), then checks
and times it ``--tasks`` times (``warmup=1``, ``rep=5`` ms, as the benchmark's searches
do) two ways, in one run:

- ``here``: `tl_jit.tune_tasks.check_and_time` in this process (``isolate_timing=False``);
- ``worker``: `tl_jit.tune_tasks.time_artifact_task` on the default pool's warm worker
  processes, one task at a time (what a search does by default): the artifact's bytes
  shipped, verified, loaded, inputs made, timed.

The difference per task is what isolating a configuration's timing costs; the first
tasks on each worker (imports, first load) are reported apart. Timings under load are
noisy: compare the rows of one run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=40)
    args = parser.parse_args()
    os.environ.setdefault("TL_CACHE_DIR", tempfile.mkdtemp(prefix="tl-timing-isolation-"))
    from autotune_scaling import matmul  # type: ignore[import-not-found]

    from tl_jit.tune_executor import local_process_pool, run_tasks, stop_pool
    from tl_jit.tune_tasks import ShippedArtifact, TimingRequest, check_and_time, time_artifact_task

    kernel = matmul(128, 128, 128, block_M=32, block_N=32, block_K=32)
    shipped = ShippedArtifact.pack(kernel.artifact_dir, kernel.cache_key)
    request = TimingRequest(
        warmup=1,
        rep=5,
        dims={},
        ref_prog=None,
        supply_prog=None,
        rtol=1e-2,
        atol=1e-2,
        skip_check=False,
    )
    check_and_time(kernel, request, None, {})  # warm this process as a search would be
    started = time.perf_counter()
    for _ in range(args.tasks):
        check_and_time(kernel, request, None, {})
    here = (time.perf_counter() - started) / args.tasks

    pool = local_process_pool(2)
    try:
        payloads: list[tuple[object, ...]] = [(shipped, request, {})]
        started = time.perf_counter()
        run_tasks(
            pool, time_artifact_task, payloads * 4, stage="timing", timeout_s=600, in_flight=1
        )
        first = (time.perf_counter() - started) / 4
        started = time.perf_counter()
        run_tasks(
            pool,
            time_artifact_task,
            payloads * args.tasks,
            stage="timing",
            timeout_s=600,
            in_flight=1,
        )
        worker = (time.perf_counter() - started) / args.tasks
    finally:
        stop_pool(pool)
    print(f"check + time one configuration, {args.tasks} tasks, {os.cpu_count()} cores")
    print(f"here            {here * 1e3:7.1f} ms/task")
    print(f"worker (warm)   {worker * 1e3:7.1f} ms/task  {worker / here:5.2f}x here")
    print(f"worker (first 4, pool start and imports included) {first * 1e3:7.1f} ms/task")
    print(f"isolation cost per configuration: {(worker - here) * 1e3:+.1f} ms")


if __name__ == "__main__":
    main()
