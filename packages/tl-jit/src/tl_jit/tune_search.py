"""One search's two stages and where each runs: every configuration built (here, on the
default pool of worker processes, or on the caller's executor), then every built kernel
checked and timed (on the executor's device workers, in local worker processes, or here;
docs/autotune.md, "A kernel that crashes when run")."""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tl_jit import tune_tasks
from tl_jit.kernel import JITKernel
from tl_jit.tune_executor import (
    Executor,
    LocalProcessPool,
    TaskFailure,
    describe_failure,
    local_process_pool,
    progress,
    run_tasks,
    stop_pool,
)
from tl_jit.tune_tasks import (
    ShippedArtifact,
    TimingRequest,
    compile_config_task,
    compile_jit_function,
    function_reference,
    install_artifact,
)

Built = tuple[JITKernel, ShippedArtifact | None]
"""A built configuration: its kernel here, and its artifact as bytes when a worker built it."""


def travels(arguments: Mapping[str, Any], configs: list[dict[str, Any]]) -> bool:
    """Whether the call's arguments and the configurations pickle, so that worker
    processes can build with them."""
    try:
        pickle.dumps((dict(arguments), configs))
    except Exception:
        return False
    return True


@dataclass(frozen=True)
class SearchPlacement:
    """Where one search's work runs.

    Attributes:
        jit_function: the function being tuned.
        executor: the caller's executor, or None (the default pool).
        max_workers: the caller's ``max_workers`` (1 builds in this process).
        in_flight: how many build tasks may be outstanding at once.
        timeout_s: the time limit of one build or timing task, or None.
        isolate_timing: the caller's ``isolate_timing`` (None: automatic).
    """

    jit_function: Any
    executor: Executor | None
    max_workers: int | None
    in_flight: int
    timeout_s: float | None
    isolate_timing: bool | None

    def builds_in_process(self) -> bool:
        """Whether configurations are compiled in this process: no executor was given
        and no worker could import the function, one worker was asked for, or this is a
        worker importing a script that tunes at import time.

        Raises:
            TypeError: an executor was given but the function is defined inside
                another function (no worker could import it).
        """
        reference = function_reference(self.jit_function)
        if reference is None and self.executor is not None:
            raise TypeError(
                f"autotune executor: {self.jit_function.func.__qualname__} is defined "
                "inside a function, so no worker can import it; define it at module level"
            )
        return self.executor is None and (
            reference is None or self.max_workers == 1 or tune_tasks.in_worker()
        )

    def build_pool(self, pools: contextlib.ExitStack) -> LocalProcessPool | None:
        """The default pool of worker processes when builds use it (stopped with
        ``pools``), else None."""
        if self.executor is not None or self.builds_in_process():
            return None
        pool = local_process_pool(self.in_flight)
        pools.callback(stop_pool, pool)
        return pool

    def isolates_timing(self, request: TimingRequest, build_pool: LocalProcessPool | None) -> bool:
        """Whether kernels are timed in local worker processes: as asked, or (None) when
        the builds ran on the default pool and the check options pickle.

        Raises:
            TypeError: ``isolate_timing=True`` but the check options do not pickle.
        """
        if self.isolate_timing is False:
            return False
        try:
            pickle.dumps(request)
        except Exception as exc:
            if self.isolate_timing:
                raise TypeError(
                    "autotune isolate_timing=True: ref_prog, supply_prog and timer must "
                    "pickle to reach the timing worker (module-level functions), but they "
                    f"do not: {describe_failure(exc)}"
                ) from None
            return False  # a lambda ref_prog, say: timed here, without isolation
        return bool(self.isolate_timing) or build_pool is not None


def compile_all(
    placement: SearchPlacement,
    arguments: Mapping[str, Any],
    configs: list[dict[str, Any]],
    pool: LocalProcessPool | None,
) -> list[Built | TaskFailure]:
    """Each configuration's kernel, or why it has none: built here when
    `SearchPlacement.builds_in_process`, else on ``pool`` or the executor, each artifact
    shipped back, verified and installed in the local cache."""
    jit_function = placement.jit_function
    outcomes: list[Built | TaskFailure] = []
    if placement.builds_in_process():
        # No isolation and no time limit here (see builds_in_process).
        with progress(len(configs), "compiling") as advance:
            for config in configs:
                try:
                    kernel = compile_jit_function(jit_function, {**arguments, **config})
                    outcomes.append((kernel, None))
                except Exception as exc:
                    outcomes.append(TaskFailure("compile", describe_failure(exc), exc))
                advance()
        return outcomes
    reference = function_reference(jit_function)
    assert reference is not None
    executor: Executor = pool if pool is not None else placement.executor  # type: ignore[assignment]
    with progress(len(configs), "compiling") as advance:
        shipped = run_tasks(
            executor,
            compile_config_task,
            [(reference, {**arguments, **config}) for config in configs],
            stage="compile",
            timeout_s=placement.timeout_s,
            in_flight=placement.in_flight,
            on_done=lambda _index, _outcome: advance(),
        )
    for item in shipped:
        if isinstance(item, TaskFailure):
            outcomes.append(item)
            continue
        try:
            outcomes.append((install_artifact(item), item))
        except Exception as exc:
            outcomes.append(TaskFailure("install", describe_failure(exc), exc))
    return outcomes


def time_all(
    placement: SearchPlacement,
    built: dict[int, Built],
    configs: list[dict[str, Any]],
    request: TimingRequest,
    build_pool: LocalProcessPool | None,
    pools: contextlib.ExitStack,
) -> tuple[dict[int, list[float]], dict[int, TaskFailure], Callable[..., Any]]:
    """First-pass timings, failures and the re-measure callback (`tl_jit.tune_measure`):
    on the executor's device workers; in local worker processes (``build_pool``, or one
    worker started for it and stopped with ``pools``), one configuration at a time so
    timings do not compete for the machine; or here."""
    from tl_jit.tune_measure import time_here, time_on_device

    tuned = {i: configs[i] for i in built}
    device_submit = getattr(placement.executor, "submit_on_device", None)
    if callable(device_submit) and all(s is not None for _, s in built.values()):
        shipped = {i: s for i, (_, s) in built.items() if s is not None}
        return time_on_device(
            device_submit,
            shipped,
            tuned,
            request,
            timeout_s=placement.timeout_s,
            in_flight=min(placement.in_flight, len(shipped)),
        )
    if placement.isolates_timing(request, build_pool):
        timing_pool = build_pool
        if timing_pool is None:
            timing_pool = local_process_pool(1)
            pools.callback(stop_pool, timing_pool)
        shipped = {
            i: s if s is not None else ShippedArtifact.pack(k.artifact_dir, k.cache_key)
            for i, (k, s) in built.items()
        }
        return time_on_device(
            timing_pool.submit, shipped, tuned, request, timeout_s=placement.timeout_s, in_flight=1
        )
    return time_here({i: k for i, (k, _) in built.items()}, tuned, request)
