"""`tl_jit.distributed.RayExecutor` on a real local Ray cluster (``ray.init(num_cpus=2)``):
a tile GEMM's configurations built by Ray workers (with their own cache root, as on
another node), shipped back, verified and installed in this process's cache, timed on
the worker that owns the (custom) device resource through a deterministic timer (the
same recorded times as a local search, which must pick the same winner); a config that
does not compile and one whose worker dies are recorded and survived; interrupting
cancels the outstanding Ray tasks.
Skipped where Ray is not installed (requirements-dev.txt installs it)."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

TESTS_DIR = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A local Ray cluster with 2 CPUs and one ``tl_device`` resource; its workers use
    their own cache root (returned), as the workers of another node would."""
    worker_cache = tmp_path_factory.mktemp("ray-worker-cache") / "cache"
    pythonpath = os.pathsep.join(p for p in (str(TESTS_DIR), os.environ.get("PYTHONPATH", "")) if p)
    # address="local": always a cluster of its own; without it ray.init joins the newest
    # cluster on this machine (another test's, running beside this one under xdist) and
    # then refuses num_cpus.
    ray.init(
        address="local",
        num_cpus=2,
        resources={"tl_device": 1},
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={
            "env_vars": {
                "PYTHONPATH": pythonpath,
                "TL_CACHE_DIR": str(worker_cache),
            }
        },
    )
    try:
        yield worker_cache
    finally:
        ray.shutdown()


def _gemm(block_M: int, block_N: int, block_K: int) -> dict[str, object]:
    return {"block_M": block_M, "block_N": block_N, "block_K": block_K}


# Eight GEMM configurations that build, with the time each is said to take (the winner
# is neither first nor last), one that does not compile (a 0-wide tile) and one whose
# timing kills the worker timing it.
TIMES: list[tuple[dict[str, object], float]] = [
    (_gemm(8, 8, 8), 0.90),
    (_gemm(8, 16, 8), 0.70),
    (_gemm(16, 8, 8), 0.80),
    (_gemm(16, 16, 8), 0.40),
    (_gemm(16, 16, 16), 0.25),
    (_gemm(32, 16, 8), 0.60),
    (_gemm(16, 32, 16), 0.30),
    (_gemm(32, 32, 16), 0.50),
]
DOES_NOT_COMPILE = _gemm(16, 16, 0)
KILLS_ITS_WORKER = _gemm(8, 8, 16)
GEMM_CONFIGS = [
    *(config for config, _ in TIMES[:3]),
    DOES_NOT_COMPILE,
    *(config for config, _ in TIMES[3:6]),
    KILLS_ITS_WORKER,
    *(config for config, _ in TIMES[6:]),
]


def _tune_gemm(executor: Any) -> Any:
    import tljit_gemm_kernel as module

    import tl_jit

    tuned = tl_jit.autotune(
        configs=GEMM_CONFIGS,
        ref_prog=module.reference,
        rtol=1e-4,
        atol=1e-4,
        executor=executor,
        cache_results=False,
        timeout=300,
        timer=module.FaultyTimings.of(TIMES, kill=[KILLS_ITS_WORKER]),
    )(module.matmul)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        best = tuned(32, 32, 32)
    return best, {repr(r.config): r for r in tuned.results}


def _check_search(best: Any, results: dict[str, Any], killed: str) -> None:
    import numpy as np

    assert best.config == _gemm(16, 16, 16)
    assert best.latency == 0.25
    a = np.random.default_rng(1).standard_normal((32, 32), dtype=np.float32)
    np.testing.assert_allclose(best(a, a), a @ a, rtol=1e-4, atol=1e-4)
    assert len(results) == 10
    for config, ms in TIMES:  # each built, loaded, checked, and timed by the seam
        assert results[repr(config)].error is None and results[repr(config)].latency == ms
    failed = results[repr(DOES_NOT_COMPILE)]
    assert failed.latency is None and "compile failed" in str(failed.error)
    assert "expected positive dims" in str(failed.error)
    dead = results[repr(KILLS_ITS_WORKER)]
    assert dead.latency is None and "timing failed" in str(dead.error)
    assert killed in str(dead.error), dead.error


def test_ray_executor_autotunes_a_gemm_like_the_local_one(
    ray_cluster: Path, cache_dir: Path
) -> None:
    from tl_jit.distributed import RayExecutor

    executor = RayExecutor(device_options={"resources": {"tl_device": 1}})
    assert executor.max_workers == 2
    best, results = _tune_gemm(executor)
    _check_search(best, results, killed="WorkerCrashedError")
    # Built by a worker with another cache root, verified and installed here: an
    # ordinary cache entry.
    assert best.cache_key is not None
    assert (cache_dir / "kernels" / best.cache_key / "manifest.json").is_file()
    assert (ray_cluster / "kernels" / best.cache_key / "manifest.json").is_file()
    assert Path(best.artifact_dir).resolve().is_relative_to(cache_dir.resolve())
    # The local executor (worker processes building and timing) picks the same winner
    # from the same timings, and survives the same failures.
    local_best, local_results = _tune_gemm(None)
    _check_search(local_best, local_results, killed="worker process exited with status 3")
    assert local_best.cache_key == best.cache_key


def test_interrupting_cancels_outstanding_ray_tasks(ray_cluster: Path) -> None:
    import tljit_scale_kernel as module

    from tl_jit.distributed import RayExecutor
    from tl_jit.tune_executor import TaskFailure, run_tasks

    executor = RayExecutor()
    submitted: list[Any] = []

    class Recording:
        def submit(self, fn: Any, *args: Any) -> Any:
            future = executor.submit(fn, *args)
            submitted.append(future)
            return future

    def interrupt(index: int, outcome: Any) -> None:
        if index == 0:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_tasks(
            Recording(),
            module.sleep_then_return,
            [(0.0,), (600.0,)],
            stage="test",
            timeout_s=None,
            in_flight=2,
            on_done=interrupt,
        )
    hanging = submitted[1]
    assert hanging.cancelled()
    with pytest.raises((ray.exceptions.TaskCancelledError, ray.exceptions.WorkerCrashedError)):
        ray.get(hanging.ref, timeout=120)
    # A task past its time limit is cancelled the same way, and recorded. The test waits
    # out the whole limit; 10 s leaves the quick task ample time to start on a warm worker.
    outcomes = run_tasks(
        executor,
        module.sleep_then_return,
        [(600.0,), (0.0,)],
        stage="compile",
        timeout_s=10,
        in_flight=2,
    )
    assert isinstance(outcomes[0], TaskFailure) and "timed out after 10 s" in outcomes[0].reason
    assert outcomes[1] == 0.0
    executor.shutdown(cancel_futures=True)
