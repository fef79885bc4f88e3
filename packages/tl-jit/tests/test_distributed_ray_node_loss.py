"""A Ray node lost mid-search fails only the configuration running there: a two-node
local cluster (``ray.cluster_utils.Cluster``), one task placed on the node that is then
removed, another on the head node. Skipped where Ray is not installed."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

TESTS_DIR = Path(__file__).resolve().parent


@pytest.fixture
def two_nodes() -> Iterator[tuple[Any, Any]]:
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "resources": {"head": 2}, "include_dashboard": False},
    )
    victim = cluster.add_node(num_cpus=1, resources={"victim": 1})
    ray.init(
        address=cluster.address,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": str(TESTS_DIR)}},
    )
    cluster.wait_for_nodes()
    try:
        yield cluster, victim
    finally:
        ray.shutdown()
        cluster.shutdown()


def test_a_lost_node_fails_its_task_and_the_others_go_on(two_nodes: tuple[Any, Any]) -> None:
    import tljit_scale_kernel as module

    from tl_jit.distributed import RayExecutor
    from tl_jit.tune_executor import TaskFailure, run_tasks

    cluster, victim = two_nodes
    on_victim = RayExecutor(compile_options={"resources": {"victim": 1}})
    on_head = RayExecutor(compile_options={"num_cpus": 0, "resources": {"head": 1}})

    class Placing:
        """Long tasks go to the node that will be lost, short ones to the head node."""

        def submit(self, fn: Any, *args: Any) -> Any:
            return (on_victim if args[0] > 60 else on_head).submit(fn, *args)

    def lose_the_node() -> None:
        time.sleep(8)
        cluster.remove_node(victim)

    threading.Thread(target=lose_the_node, daemon=True).start()
    outcomes = run_tasks(
        Placing(),
        module.sleep_then_return,
        [(300.0,), (0.0,), (10.0,)],
        stage="compile",
        timeout_s=250,
        in_flight=3,
    )
    assert isinstance(outcomes[0], TaskFailure)
    assert "NodeDiedError" in outcomes[0].reason, outcomes[0].reason
    assert outcomes[1:] == [0.0, 10.0]
