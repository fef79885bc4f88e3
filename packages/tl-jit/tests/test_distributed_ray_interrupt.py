"""``Ctrl-C`` during a search on a Ray cluster: a real SIGINT sent to a process tuning
through `tl_jit.distributed.RayExecutor` cancels the outstanding Ray tasks (the workers
of two hanging builds are killed while the cluster still runs) and the process exits
with ``KeyboardInterrupt``. The process starts its own local cluster (tens of seconds),
so the test is marked slow. Skipped where Ray is not installed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")

TESTS_DIR = Path(__file__).resolve().parent

SCRIPT = """
import json, os, sys, time
sys.path.insert(0, {tests!r})
import ray
import tl_jit
import tljit_scale_kernel as module
from tl_jit.distributed import RayExecutor


def alive(pid):
    try:
        os.kill(pid, 0)
        with open(f"/proc/{{pid}}/stat") as handle:
            return handle.read().split()[2] != "Z"
    except OSError:
        return False


def main():
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={{"env_vars": {{
            "PYTHONPATH": {tests!r},
            "TL_CACHE_DIR": {worker_cache!r},
            "TLJIT_FRAGILE_MARKER": {marker!r},
        }}}},
    )
    tuned = tl_jit.autotune(
        configs=[{{"repeat": 1, "crash": "hang"}}, {{"repeat": 1, "crash": "hang"}}, {{"repeat": 1}}],
        ref_prog=module.reference,
        executor=RayExecutor(),
        cache_results=False,
        timeout=None,
    )(module.fragile_scale)
    print("tuning", flush=True)
    try:
        tuned(4096, 2.0)
    except KeyboardInterrupt:
        # Still connected to the cluster: the cancelled builds' workers must go.
        with open({marker!r}) as handle:
            pids = [int(word) for word in handle.read().split()]
        deadline = time.monotonic() + 60
        while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        print(json.dumps({{"hanging": pids, "alive": [p for p in pids if alive(p)]}}), flush=True)
        raise


if __name__ == "__main__":
    main()
"""


@pytest.mark.slow
def test_sigint_cancels_outstanding_ray_tasks_and_exits(tmp_path: Path) -> None:
    marker = tmp_path / "hang.pids"
    script = tmp_path / "tune_on_ray.py"
    script.write_text(
        SCRIPT.format(
            tests=str(TESTS_DIR),
            worker_cache=str(tmp_path / "worker-cache"),
            marker=str(marker),
        )
    )
    env = {**os.environ, "TL_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("TL_DISABLE_CACHE", None)
    env.pop("RAY_ADDRESS", None)
    process = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 400
        # Both hanging builds are running on Ray workers (the third is still pending).
        while not marker.exists() or marker.read_text().count("\n") < 2:
            assert process.poll() is None, process.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "the hanging builds did not start within 400 s"
            time.sleep(0.2)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=180)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode != 0
    assert stderr.rstrip().endswith("KeyboardInterrupt"), stderr[-3000:]
    found = json.loads(stdout.strip().splitlines()[-1])
    assert len(found["hanging"]) == 2
    assert found["alive"] == [], f"Ray workers {found['alive']} outlived the interrupted search"
