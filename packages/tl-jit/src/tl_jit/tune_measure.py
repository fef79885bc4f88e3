"""The autotuner's timing stage: every built configuration checked and timed once, here
or on timing workers (the executor's device workers, or local worker processes that
keep a kernel crashing when run from taking the calling process down), and a callback
that times the finalists again (`tl_jit.tune_timing.pick_after_remeasure` decides)."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from tl_jit.kernel import JITKernel
from tl_jit.tune_executor import TaskFailure, describe_failure, progress, run_tasks
from tl_jit.tune_tasks import ShippedArtifact, TimingRequest, check_and_time, time_artifact_task

Timings = dict[int, list[float]]
Remeasure = Callable[[list[int], int], Timings]


def time_here(
    kernels: dict[int, JITKernel],
    configs: Mapping[int, Mapping[str, Any]],
    request: TimingRequest,
) -> tuple[Timings, dict[int, TaskFailure], Remeasure]:
    """Check and time each kernel (built from ``configs[index]``) in this process, kernels
    of one signature (parameter dtypes, shapes, outputs) on one set of inputs, made from
    the first such kernel's params (a configuration that changes the signature, say the
    dtype, gets inputs of its own instead of being refused for the first one's); returns
    the timings, the failures and the re-measure callback (interleaved rounds, no check)."""
    timings: Timings = {}
    failures: dict[int, TaskFailure] = {}
    inputs_by_signature: dict[Any, list[Any]] = {}

    def inputs_of(index: int) -> list[Any] | None:
        return inputs_by_signature.get(_signature(kernels[index]))

    with progress(len(kernels), "timing") as advance:
        for index in sorted(kernels):
            try:
                samples, made = check_and_time(
                    kernels[index], request.first_pass(timings), inputs_of(index), configs[index]
                )
                inputs_by_signature.setdefault(_signature(kernels[index]), made)
                timings[index] = samples
            except Exception as exc:
                failures[index] = TaskFailure("check/benchmark", describe_failure(exc), exc)
            advance()
    unchecked = dataclasses.replace(request, skip_check=True, rounds=1)

    def remeasure(chosen: list[int], rounds: int) -> Timings:
        more: Timings = {i: [] for i in chosen}
        with progress(len(chosen) * rounds, "re-measuring") as advance_more:
            for _ in range(rounds):  # interleaved: every candidate once per round
                for index in chosen:
                    # It ran before: a failure now only loses its round.
                    with contextlib.suppress(Exception):
                        more[index] += check_and_time(
                            kernels[index], unchecked, inputs_of(index), configs[index]
                        )[0]
                    advance_more()
        return more

    return timings, failures, remeasure


def _signature(kernel: JITKernel) -> tuple[Any, ...]:
    """What inputs a kernel takes: each parameter's dtype and shape, and its outputs."""
    return (
        tuple((str(p.dtype), tuple(str(d) for d in p.shape)) for p in kernel.params),
        tuple(kernel.out_idx),
    )


class _DeviceSubmitter:
    """An executor whose ``submit`` is another executor's ``submit_on_device``."""

    def __init__(self, submit: Callable[..., Any]) -> None:
        self.submit = submit


def time_on_device(
    submit_on_device: Callable[..., Any],
    shipped: dict[int, ShippedArtifact],
    configs: Mapping[int, Mapping[str, Any]],
    request: TimingRequest,
    *,
    timeout_s: float | None,
    in_flight: int,
) -> tuple[Timings, dict[int, TaskFailure], Remeasure]:
    """Check and time each shipped artifact (built from ``configs[index]``) on timing
    workers, through ``submit_on_device`` (one task per configuration, at most
    ``in_flight`` at once, each failing alone: a kernel that crashes its worker, raises
    or runs past ``timeout_s`` fails its configuration); returns the timings, the
    failures and the re-measure callback (one task per finalist, ``rounds`` timings
    each, no check)."""
    executor = _DeviceSubmitter(submit_on_device)

    def run(chosen: list[int], task_request: TimingRequest, what: str) -> dict[int, Any]:
        with progress(len(chosen), what) as advance:
            outcomes = run_tasks(
                executor,
                time_artifact_task,
                [(shipped[i], task_request, dict(configs[i])) for i in chosen],
                stage="timing",
                timeout_s=timeout_s,
                in_flight=in_flight,
                on_done=lambda _index, _outcome: advance(),
            )
        return dict(zip(chosen, outcomes, strict=True))

    timings: Timings = {}
    failures: dict[int, TaskFailure] = {}
    # With early stop each configuration's baseline depends on those timed before it,
    # so they are timed one at a time; otherwise all are submitted together.
    batches = (
        [[i] for i in sorted(shipped)]
        if request.early_stop_factor is not None
        else [sorted(shipped)]
    )
    for batch in batches:
        for index, outcome in run(batch, request.first_pass(timings), "timing").items():
            if isinstance(outcome, TaskFailure):
                failures[index] = outcome
            else:
                timings[index] = list(outcome)

    def remeasure(chosen: list[int], rounds: int) -> Timings:
        again = dataclasses.replace(request, skip_check=True, rounds=rounds)
        found = run(chosen, again, "re-measuring")
        return {i: list(v) for i, v in found.items() if not isinstance(v, TaskFailure)}

    return timings, failures, remeasure


def reference_latency(kernel: JITKernel, request: TimingRequest) -> float | None:
    """The reference program's time per call in ms on the winner's inputs (TileLang's
    ``ref_latency``), timed here with the search's ``warmup``/``rep``; None without a
    reference, or when it fails (the search's result does not depend on it)."""
    if request.ref_prog is None:
        return None
    try:
        profiler = kernel.get_profiler(dims=request.dims_for(kernel))
        inputs = request.inputs_for(kernel, profiler)
        value = profiler.do_bench(
            request.ref_prog, warmup=request.warmup, rep=request.rep, inputs=inputs
        )
    except Exception:  # a reference that cannot be timed alone: no figure
        return None
    return float(value) if isinstance(value, int | float) else None
