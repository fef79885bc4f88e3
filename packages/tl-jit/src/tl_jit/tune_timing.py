"""The autotuner's timing statistic, in one place.

`kernel_latency_ms` is the one seam through which the autotuner turns timed calls into
a number: the median of the per-call times (robust to preemption by other processes).
When tl_jit gains a shared timing statistic (median with spread, warm-up until stable),
this function is the only one to point at it. `pick_after_remeasure` is the
autotuner's second look: its top candidates are timed again, interleaved, and the pick
is made on the median of all their rounds, so one lucky or unlucky run on a busy
machine does not decide.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

REMEASURE_TOP = 3
"""How many of the fastest candidates the autotuner times again before picking."""

REMEASURE_ROUNDS = 3
"""How many more timed rounds each of them gets (interleaved across candidates)."""


def kernel_latency_ms(profiler: Any, inputs: Sequence[Any], *, warmup: float, rep: float) -> float:
    """One timing of a kernel: the median ms per call over ``rep`` ms of calls after
    ``warmup`` ms of calls (`tl_jit.Profiler.do_bench`)."""
    latency = profiler.do_bench(warmup=warmup, rep=rep, inputs=list(inputs), return_mode="median")
    assert isinstance(latency, float)
    return latency


def combine(samples: Sequence[float]) -> float:
    """The statistic of several timings of one kernel: their median."""
    if not samples:
        raise ValueError("samples: expected at least one timing, got none")
    return float(statistics.median(samples))


def pick_after_remeasure(
    first: dict[int, list[float]],
    remeasure: Callable[[list[int], int], dict[int, list[float]]],
    *,
    top: int = REMEASURE_TOP,
    rounds: int = REMEASURE_ROUNDS,
) -> tuple[int, dict[int, float]]:
    """Pick the fastest candidate: time the ``top`` fastest of the first pass ``rounds``
    more times and decide on the median of all their timings.

    Args:
        first: candidate index -> its first-pass timings (ms).
        remeasure: ``remeasure(indices, rounds)`` -> index -> that many more timings,
            interleaved across candidates (a candidate that fails now is left out).
        top: how many candidates get a second look.
        rounds: how many more timings each gets.

    Returns:
        The winning index and every candidate's final latency (ms).

    Raises:
        ValueError: ``first`` is empty.
    """
    if not first:
        raise ValueError("first: expected at least one timed candidate, got none")
    latency = {index: combine(samples) for index, samples in first.items()}
    finalists = sorted(latency, key=latency.__getitem__)[: max(1, top)]
    if len(finalists) > 1 and rounds > 0:
        more = remeasure(finalists, rounds)
        for index in finalists:
            if more.get(index):
                latency[index] = combine([*first[index], *more[index]])
    winner = min(finalists, key=latency.__getitem__)
    return winner, latency
