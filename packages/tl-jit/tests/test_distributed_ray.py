"""`tl_jit.distributed.RayExecutor` on a real local Ray cluster (``ray.init(num_cpus=2)``):
configurations built by Ray workers (with their own cache root, as on another node),
shipped back, verified and installed in this process's cache, timed on the worker that
owns the (custom) device resource; a config that does not compile and one whose worker
dies are recorded and survived; interrupting cancels the outstanding Ray tasks.
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
    ray.init(
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


CONFIGS: list[dict[str, object]] = [
    {"repeat": 3000},
    {"repeat": 2500},
    {"repeat": 2000},
    {"repeat": 1500},
    {"repeat": 1, "crash": "raise"},
    {"repeat": 1000},
    {"repeat": 1, "crash": "exit"},
    {"repeat": 1},
    {"repeat": 700},
]


def _tune(executor: Any) -> Any:
    import tljit_scale_kernel as module

    import tl_jit

    tuned = tl_jit.autotune(
        configs=CONFIGS,
        warmup=1,
        rep=5,
        ref_prog=module.reference,
        executor=executor,
        cache_results=False,
        timeout=300,
    )(module.fragile_scale)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        best = tuned(4096, 2.0)
    return best, tuned.results


def test_ray_executor_autotunes_like_the_local_one(ray_cluster: Path, cache_dir: Path) -> None:
    import numpy as np

    from tl_jit.distributed import RayExecutor

    executor = RayExecutor(device_options={"resources": {"tl_device": 1}})
    assert executor.max_workers == 2
    best, results = _tune(executor)
    assert best.config == {"repeat": 1}
    np.testing.assert_allclose(best(np.ones(4096, np.float32)), 2.0)
    by_config = {repr(r.config): r for r in results}
    assert "ValueError: this configuration does not compile" in str(
        by_config[repr({"repeat": 1, "crash": "raise"})].error
    )
    assert "WorkerCrashedError" in str(by_config[repr({"repeat": 1, "crash": "exit"})].error)
    timed = [r for r in results if r.error is None]
    assert len(timed) == 7 and all(r.latency is not None and r.latency > 0 for r in timed)
    # Built by a worker with another cache root, installed here: an ordinary cache entry.
    assert best.cache_key is not None
    assert (cache_dir / "kernels" / best.cache_key / "manifest.json").is_file()
    assert (ray_cluster / "kernels" / best.cache_key / "manifest.json").is_file()
    assert Path(best.artifact_dir).resolve().is_relative_to(cache_dir.resolve())
    # The local executor picks the same winner from the same configurations.
    local_best, local_results = _tune(None)
    assert local_best.config == best.config
    assert [r.error is None for r in local_results] == [r.error is None for r in results]


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
    # A task past its time limit is cancelled the same way, and recorded.
    outcomes = run_tasks(
        executor,
        module.sleep_then_return,
        [(600.0,), (0.0,)],
        stage="compile",
        timeout_s=20,
        in_flight=2,
    )
    assert isinstance(outcomes[0], TaskFailure) and "timed out after 20 s" in outcomes[0].reason
    assert outcomes[1] == 0.0
    executor.shutdown(cancel_futures=True)
