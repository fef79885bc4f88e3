"""The autotuner's timing statistic, in one place.

`kernel_latency_ms` is the one seam through which the autotuner turns timed calls into
a number: the median of the per-call times (robust to preemption by other processes).
When tl_jit gains a shared timing statistic (median with spread, warm-up until stable),
this function is the only one to point at it. A search may replace it with its own
``timer`` (`Timer`: a function of a `Measurement`), for instance `RecordedTimings`,
which replays recorded times so two searches (a local one and one on a cluster) can
be compared on the same timings. `pick_after_remeasure` is the
autotuner's second look: its top candidates are timed again, interleaved, and the pick
is made on the median of all their rounds, so one lucky or unlucky run on a busy
machine does not decide.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
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


@dataclass(frozen=True)
class Measurement:
    """What a `Timer` times: one configuration's kernel, checked already, on its inputs.

    Attributes:
        kernel: the loaded `tl_jit.JITKernel`.
        profiler: its `tl_jit.Profiler` (``do_bench`` times it).
        inputs: the arguments to time it on.
        config: the configuration it was built from (the tuned arguments only).
        warmup: ms of warmup calls asked for.
        rep: ms of timed calls asked for.
    """

    kernel: Any
    profiler: Any
    inputs: Sequence[Any]
    config: Mapping[str, Any]
    warmup: float
    rep: float


Timer = Callable[[Measurement], float]
"""``autotune(timer=...)``: one timing of one configuration in ms (lower is faster). It
runs where the kernel is timed (the calling process, a local worker process or a device
worker), so a timer that travels to workers must pickle (a module-level function, or an
instance of a module-level class)."""


def default_timer(measurement: Measurement) -> float:
    """The autotuner's own timer: `kernel_latency_ms` of the measured kernel."""
    return kernel_latency_ms(
        measurement.profiler,
        measurement.inputs,
        warmup=measurement.warmup,
        rep=measurement.rep,
    )


def config_text(config: Mapping[str, Any]) -> str:
    """A configuration as canonical JSON text (sorted names): how `RecordedTimings`
    looks configurations up.

    Raises:
        TypeError: a value is not JSON data (str, int, float, bool, None, lists, dicts).
    """
    return json.dumps(dict(config), sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class RecordedTimings:
    """A `Timer` that replays recorded times instead of running the kernel's timing loop:
    every timing of a configuration is the time recorded for it. The search still builds,
    loads and checks each kernel; only the clock is replaced, so two searches (on two
    executors, two machines, or a saved result replayed) decide on the same timings.

    Args:
        times: ``[(config, ms), ...]``; each config a dict of the tuned arguments, as in
            ``configs``.

    Raises:
        ValueError, TypeError: a time is not a positive number, a config is not a dict
            of JSON values or appears twice.
    """

    times: tuple[tuple[str, float], ...] = field(default=())

    @classmethod
    def of(cls, times: Sequence[tuple[Mapping[str, Any], float]]) -> RecordedTimings:
        """Build from ``[(config, ms), ...]`` (see the class)."""
        table: dict[str, float] = {}
        for entry in times:
            config, ms = entry
            if not isinstance(config, Mapping):
                raise TypeError(f"RecordedTimings times: expected dict configs, got {config!r}")
            if isinstance(ms, bool) or not isinstance(ms, int | float) or not ms > 0:
                raise ValueError(
                    f"RecordedTimings times: expected a time in ms > 0 for {dict(config)}, "
                    f"got {ms!r}"
                )
            text = config_text(config)
            if text in table:
                raise ValueError(f"RecordedTimings times: {text} appears twice")
            table[text] = float(ms)
        return cls(tuple(sorted(table.items())))

    def __call__(self, measurement: Measurement) -> float:
        """The time recorded for ``measurement.config``.

        Raises:
            KeyError: no time was recorded for it (the configuration fails, named).
        """
        wanted = config_text(measurement.config)
        for text, ms in self.times:
            if text == wanted:
                return ms
        raise KeyError(f"RecordedTimings: no time recorded for configuration {wanted}")


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
