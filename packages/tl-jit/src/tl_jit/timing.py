"""The one timing statistic `Profiler`, `tl bench` and the autotuner share.

`measure` warms ``fn`` up until its time per call is stable, times calls one by one and
returns `TimingStats`: the median (robust to a call preempted by another process) with its
spread (quartiles, min and max), how many samples lie outside the usual outlier fences
(1.5 interquartile ranges beyond the quartiles), how the warm-up ended, and the
throughput when the caller says how many flops or bytes one call does. `summarize` is the
statistic alone, on samples the caller already has.

Wall-clock timing on the CPU, or the events of torch's accelerator (device-generic API)
when ``device`` names it; nothing here names a target.
"""

from __future__ import annotations

import importlib
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

HOST_DEVICE = "cpu"
"""The ``device`` of `measure` that times with the wall clock."""
FLUSH_BYTES = 64 << 20
"""Bytes written before every timed call by ``flush_cache=True`` (larger than common L3)."""
STABLE_TOLERANCE = 0.05
"""Warm-up ends when two successive windows' median times differ by at most this fraction."""
MIN_SAMPLES = 5
"""At least this many timed calls, however long one call takes."""
OUTLIER_FENCE = 1.5
"""A sample beyond this many interquartile ranges outside the quartiles is an outlier."""


@dataclass(frozen=True)
class TimingStats:
    """What `measure` found: per-call times in milliseconds and what follows from them.

    Attributes:
        samples_ms: every timed call's time, in call order.
        median_ms, q1_ms, q3_ms, min_ms, max_ms, mean_ms: statistics of ``samples_ms``
            (quartiles by linear interpolation).
        outliers: how many samples lie beyond ``OUTLIER_FENCE`` interquartile ranges
            outside the quartiles (a preempted or cold call).
        warmup_calls: untimed calls made first.
        warmup_stable: whether the warm-up ended because two successive windows agreed
            (False: it ran out of time first; None: no warm-up was asked for).
        flops, bytes: work per call the caller declared (None when not given).
    """

    samples_ms: tuple[float, ...]
    median_ms: float
    q1_ms: float
    q3_ms: float
    min_ms: float
    max_ms: float
    mean_ms: float
    outliers: int
    warmup_calls: int = 0
    warmup_stable: bool | None = None
    flops: float | None = None
    bytes: float | None = None

    @property
    def iqr_ms(self) -> float:
        """The interquartile range (q3 - q1)."""
        return self.q3_ms - self.q1_ms

    @property
    def flops_per_s(self) -> float | None:
        """``flops`` per second at the median time (None without ``flops``)."""
        return None if self.flops is None else self.flops / (self.median_ms * 1e-3)

    @property
    def bytes_per_s(self) -> float | None:
        """``bytes`` per second at the median time (None without ``bytes``)."""
        return None if self.bytes is None else self.bytes / (self.median_ms * 1e-3)

    def value(self, return_mode: str) -> float:
        """One figure: ``"median"``, ``"mean"``, ``"min"`` or ``"max"``."""
        figures = {
            "median": self.median_ms,
            "mean": self.mean_ms,
            "min": self.min_ms,
            "max": self.max_ms,
        }
        if return_mode not in figures:
            raise ValueError(f"return_mode: expected one of {tuple(figures)}, got {return_mode!r}")
        return figures[return_mode]

    def quantiles(self, qs: Sequence[float]) -> list[float]:
        """The samples' quantiles ``qs`` (each in [0, 1]), by linear interpolation."""
        ordered = sorted(self.samples_ms)
        return [quantile(ordered, q) for q in qs]

    def throughput(self) -> str:
        """``"12.3 GFLOP/s"``, ``"4.5 GB/s"``, both joined by ``", "``, or ``""``."""
        parts = []
        if self.flops_per_s is not None:
            parts.append(_scaled(self.flops_per_s, "FLOP/s"))
        if self.bytes_per_s is not None:
            parts.append(_scaled(self.bytes_per_s, "B/s"))
        return ", ".join(parts)

    def summary(self, name: str | None = None) -> str:
        """One line: name, median, spread, samples, outliers, throughput, warm-up note."""
        head = f"{name}: " if name else ""
        text = (
            f"{head}median {_ms(self.median_ms)} (IQR {_ms(self.q1_ms)} .. {_ms(self.q3_ms)}, "
            f"min {_ms(self.min_ms)}, max {_ms(self.max_ms)}; {len(self.samples_ms)} calls, "
            f"{self.outliers} outlier{'' if self.outliers == 1 else 's'})"
        )
        throughput = self.throughput()
        if throughput:
            text += f", {throughput}"
        if self.warmup_stable is False:
            text += " [warm-up did not settle: times still changing]"
        return text


def _ms(value: float) -> str:
    return f"{value:.4g} ms"


def _scaled(value: float, unit: str) -> str:
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= factor:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def quantile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted ``ordered`` by linear interpolation.

    Raises:
        ValueError: ``q`` is outside [0, 1] or ``ordered`` is empty.
    """
    if isinstance(q, bool) or not isinstance(q, int | float) or not 0.0 <= q <= 1.0:
        raise ValueError(f"quantiles: expected values in [0, 1], got {q!r}")
    if not ordered:
        raise ValueError("quantiles: no samples")
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summarize(
    samples_ms: Sequence[float],
    *,
    warmup_calls: int = 0,
    warmup_stable: bool | None = None,
    flops: float | None = None,
    bytes: float | None = None,
) -> TimingStats:
    """The shared statistic of per-call times (milliseconds).

    Raises:
        ValueError: no samples, a sample that is not a finite number >= 0, or a
            ``flops``/``bytes`` that is not a number > 0.
    """
    samples = tuple(float(s) for s in samples_ms)
    if not samples:
        raise ValueError("samples_ms: expected at least one time, got none")
    for sample in samples:
        if not math.isfinite(sample) or sample < 0:
            raise ValueError(f"samples_ms: expected finite times >= 0, got {sample!r}")
    for label, amount in (("flops", flops), ("bytes", bytes)):
        if amount is not None and (
            isinstance(amount, bool)
            or not isinstance(amount, int | float)
            or not 0 < amount < math.inf
        ):
            raise ValueError(
                f"{label}: expected a finite number > 0 (work per call), got {amount!r}"
            )
    ordered = sorted(samples)
    q1, q3 = quantile(ordered, 0.25), quantile(ordered, 0.75)
    fence = OUTLIER_FENCE * (q3 - q1)
    outliers = sum(1 for s in samples if s < q1 - fence or s > q3 + fence)
    return TimingStats(
        samples_ms=samples,
        median_ms=statistics.median(ordered),
        q1_ms=q1,
        q3_ms=q3,
        min_ms=ordered[0],
        max_ms=ordered[-1],
        mean_ms=statistics.fmean(samples),
        outliers=outliers,
        warmup_calls=warmup_calls,
        warmup_stable=warmup_stable,
        flops=None if flops is None else float(flops),
        bytes=None if bytes is None else float(bytes),
    )


def is_stable(previous_ms: float, current_ms: float, tolerance: float = STABLE_TOLERANCE) -> bool:
    """Whether two successive warm-up windows' medians agree within ``tolerance``."""
    low = min(previous_ms, current_ms)
    return abs(previous_ms - current_ms) <= tolerance * max(low, 1e-9)


def validate_window(
    warmup: float, rep: float, max_repeats: int, *, warmup_name: str = "warmup"
) -> None:
    """Refuse a timing window `measure` cannot use.

    Raises:
        ValueError: ``warmup`` or ``rep`` is not a finite number of milliseconds >= 0,
            ``rep`` is 0, or ``max_repeats`` is not an int >= 1 (each named).
    """
    for name, value in ((warmup_name, warmup), ("rep", rep)):
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value < 0
        ):
            raise ValueError(
                f"{name}: expected a finite number of milliseconds >= 0, got {value!r}"
            )
    if rep <= 0:
        raise ValueError(f"rep: expected a number of milliseconds > 0, got {rep!r}")
    if isinstance(max_repeats, bool) or not isinstance(max_repeats, int) or max_repeats < 1:
        raise ValueError(f"max_repeats: expected an int >= 1, got {max_repeats!r}")


#: TileLang's ``do_bench(backend=...)`` names: how a GPU call is timed (CUDA events,
#: CUPTI's kernel records, a replayed CUDA graph). Every one times the same calls here.
TIMING_BACKENDS = ("event", "cupti", "cudagraph")


def check_timing_backend(backend: object) -> None:
    """Accept TileLang's ``backend=`` of ``do_bench``: each of `TIMING_BACKENDS` times
    the calls as `measure` does (the device's events, or the wall clock on the CPU).

    Raises:
        ValueError: ``backend`` is not one of `TIMING_BACKENDS`.
    """
    if not isinstance(backend, str) or backend not in TIMING_BACKENDS:
        raise ValueError(f"backend: expected one of {TIMING_BACKENDS}, got {backend!r}")


def torch_accelerator(*, import_torch: bool = False) -> Any:
    """The ``torch.device`` of the accelerator torch reports, or None.

    None when torch is not imported (or, with ``import_torch``, not installed), is too
    old for ``torch.accelerator``, or sees no device.
    """
    torch = sys.modules.get("torch")
    if torch is None and import_torch:
        try:
            torch = importlib.import_module("torch")
        except ImportError:
            return None
    accelerator = getattr(torch, "accelerator", None) if torch is not None else None
    if accelerator is None:
        return None
    try:
        if not accelerator.is_available():
            return None
        return accelerator.current_accelerator()
    except Exception:  # a broken driver means "no accelerator", not a crash
        return None


def timing_device(device: str) -> Any:
    """None for wall-clock timing, else the torch device whose events time the calls.

    Raises:
        ValueError: ``device`` is not ``"auto"``, ``"cpu"`` or torch's accelerator type.
    """
    if not isinstance(device, str):
        raise ValueError(f"device: expected a str, got {type(device).__name__} {device!r}")
    if device == HOST_DEVICE:
        return None
    accelerator = torch_accelerator(import_torch=device != "auto")
    if device == "auto":
        return accelerator
    if accelerator is None or str(accelerator.type) != device:
        found = "none" if accelerator is None else repr(str(accelerator.type))
        raise ValueError(
            f"device: expected 'auto', {HOST_DEVICE!r} or the device type of torch's "
            f"accelerator (found: {found}), got {device!r}"
        )
    return accelerator


TimeCalls = Callable[[int], list[float]]
"""Runs the timed function n times and returns each call's milliseconds."""


def _wall_clock_timer(
    fn: Callable[[], Any], flush: Callable[[], None] | None, clock: Callable[[], float]
) -> TimeCalls:
    def time_calls(count: int) -> list[float]:
        times = []
        for _ in range(count):
            if flush is not None:
                flush()
            begin = clock()
            fn()
            times.append((clock() - begin) * 1e3)
        return times

    return time_calls


def _event_timer(fn: Callable[[], Any], device: Any, flush: Callable[[], None] | None) -> TimeCalls:
    torch: Any = sys.modules["torch"]  # `timing_device` found the accelerator through it

    def time_calls(count: int) -> list[float]:
        starts = [torch.Event(device=device, enable_timing=True) for _ in range(count)]
        ends = [torch.Event(device=device, enable_timing=True) for _ in range(count)]
        torch.accelerator.synchronize()
        for start, end in zip(starts, ends, strict=True):
            if flush is not None:
                flush()
            start.record()
            fn()
            end.record()
        torch.accelerator.synchronize()
        return [float(s.elapsed_time(e)) for s, e in zip(starts, ends, strict=True)]

    return time_calls


def warm_up(
    time_calls: TimeCalls,
    estimate_ms: float,
    warmup_ms: float,
    *,
    max_warmup_ms: float | None = None,
    tolerance: float = STABLE_TOLERANCE,
    max_calls: int = 100_000,
    overhead_ms: float = 0.0,
) -> tuple[int, bool | None, float]:
    """Call until at least ``warmup_ms`` passed and two successive windows agree.

    A window is about a quarter of ``warmup_ms`` of calls (at least 3). Warm-up gives up
    after ``max_warmup_ms`` (default: 4x ``warmup_ms``) or ``max_calls`` calls. Each call
    counts as its time plus ``overhead_ms`` (untimed work around it, such as a cache
    flush) against those budgets.

    Returns:
        ``(calls made, stable, the last window's median ms)``; stable is None and the
        median is ``estimate_ms`` when ``warmup_ms`` is 0 (no warm-up).
    """
    if warmup_ms <= 0:
        return 0, None, estimate_ms
    limit_ms = 4 * warmup_ms if max_warmup_ms is None else max_warmup_ms
    per_call_ms = max(estimate_ms + overhead_ms, 1e-6)
    window = max(3, min(max_calls, int(warmup_ms / 4 / per_call_ms)))
    spent_ms = 0.0
    calls = 0
    previous: float | None = None
    while True:
        times = time_calls(window)
        calls += window
        spent_ms += sum(times) + overhead_ms * window
        current = statistics.median(times)
        settled = previous is not None and is_stable(previous, current, tolerance)
        if settled and spent_ms >= warmup_ms:
            return calls, True, current
        if spent_ms >= limit_ms or calls >= max_calls:
            return calls, False, current
        previous = current


def measure(
    fn: Callable[[], Any],
    *,
    warmup: float = 25.0,
    rep: float = 100.0,
    flops: float | None = None,
    bytes: float | None = None,
    flush_cache: bool = False,
    device: str = "auto",
    max_repeats: int = 100_000,
    max_warmup: float | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> TimingStats:
    """Time ``fn()``: warm up until stable, then time about ``rep`` ms of calls one by one.

    Args:
        fn: the thing to time, called without arguments.
        warmup: at least this many milliseconds of untimed calls; the warm-up goes on
            (up to ``max_warmup``, default 4x ``warmup``) until two successive windows'
            median times agree within ``STABLE_TOLERANCE``.
        rep: milliseconds of timed calls (at least ``MIN_SAMPLES`` calls).
        flops, bytes: work one call does, for the throughput.
        flush_cache: write a 64 MiB buffer before every call (cold CPU caches); the
            flush's time counts in the ``warmup`` and ``rep`` windows (not in the samples).
        device: ``"cpu"`` (wall clock); the device type of torch's accelerator (its
            events, synchronized through ``torch.accelerator``); or ``"auto"``: the
            accelerator when torch is already imported and has one, else the wall clock.
        max_repeats: upper bound on the number of timed calls.
        clock: the wall clock in seconds (a stand-in in tests).

    Returns:
        The `TimingStats` of the timed calls.

    Raises:
        ValueError: a bad ``warmup``, ``rep``, ``max_repeats``, ``device``, ``flops`` or
            ``bytes``.
        whatever ``fn`` raises.
    """
    validate_window(warmup, rep, max_repeats)
    if max_warmup is not None:
        validate_window(max_warmup, rep, max_repeats, warmup_name="max_warmup")
    summarize([0.0], flops=flops, bytes=bytes)  # validates flops/bytes before any call
    flush: Callable[[], None] | None = None
    if flush_cache:
        import numpy as np

        buffer = np.empty(FLUSH_BYTES // 8, dtype=np.int64)

        def flush() -> None:
            buffer.fill(0)

    accelerator = timing_device(device)
    time_calls = (
        _wall_clock_timer(fn, flush, clock)
        if accelerator is None
        else _event_timer(fn, accelerator, flush)
    )
    # The windows are wall-clock budgets, so a flush counts in them: sized by the
    # call alone, a near-empty call with a 64 MiB flush ran max_repeats flushes
    # (minutes) for a 1 ms ``rep``.
    flush_ms = 0.0
    if flush is not None:
        begin = time.perf_counter()
        flush()
        flush_ms = (time.perf_counter() - begin) * 1e3
    # The first call sizes the warm-up windows and the timed run.
    estimate_ms = max(time_calls(1)[0], 1e-4)
    warmup_calls, stable, warm_ms = warm_up(
        time_calls,
        estimate_ms,
        warmup,
        max_warmup_ms=max_warmup,
        max_calls=max_repeats,
        overhead_ms=flush_ms,
    )
    count = max(MIN_SAMPLES, min(max_repeats, int(rep / max(warm_ms + flush_ms, 1e-4))))
    samples = time_calls(count)
    return summarize(
        samples,
        warmup_calls=warmup_calls + 1,
        warmup_stable=stable,
        flops=flops,
        bytes=bytes,
    )
