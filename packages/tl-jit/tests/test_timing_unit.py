"""The shared timing statistic (tl_jit.timing), on synthetic samples and a synthetic clock."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest

from tl_jit import timing
from tl_jit.profiler import do_bench
from tl_jit.timing import TimingStats, is_stable, measure, summarize, warm_up


def test_summarize_gives_median_quartiles_and_outliers() -> None:
    samples = [1.0, 1.1, 0.9, 1.0, 1.05, 0.95, 1.0, 40.0]  # one call preempted
    stats = summarize(samples)
    assert stats.median_ms == pytest.approx(1.0)
    assert stats.min_ms == 0.9 and stats.max_ms == 40.0
    assert stats.q1_ms == pytest.approx(0.9875) and stats.q3_ms == pytest.approx(1.0625)
    assert stats.outliers == 1
    assert stats.mean_ms > 5  # the mean is what the preempted call drags; the median is not
    line = stats.summary("matmul")
    assert line.startswith("matmul: median 1 ms (IQR 0.9875 ms .. 1.062 ms")
    assert "1 outlier)" in line and "8 calls" in line


def test_throughput_from_flops_and_bytes() -> None:
    stats = summarize([2.0, 2.0, 2.0], flops=4e9, bytes=2e6)
    assert stats.flops_per_s == pytest.approx(2e12)
    assert stats.bytes_per_s == pytest.approx(1e9)
    assert stats.throughput() == "2 TFLOP/s, 1 GB/s"
    assert stats.summary().endswith("2 TFLOP/s, 1 GB/s")
    assert summarize([1.0]).throughput() == ""


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"flops": 0}, "flops: expected a finite number > 0"),
        ({"bytes": -1}, "bytes: expected a finite number > 0"),
        ({"flops": True}, "flops"),
    ],
)
def test_summarize_refuses_bad_work(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        summarize([1.0], **kwargs)


def test_summarize_refuses_bad_samples() -> None:
    with pytest.raises(ValueError, match="at least one time"):
        summarize([])
    with pytest.raises(ValueError, match="finite times"):
        summarize([1.0, float("nan")])


def test_value_and_quantiles() -> None:
    stats = summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert stats.value("median") == 3.0 and stats.value("min") == 1.0
    assert stats.value("max") == 100.0 and stats.value("mean") == pytest.approx(22.0)
    assert stats.quantiles([0.0, 0.5, 1.0]) == [1.0, 3.0, 100.0]
    with pytest.raises(ValueError, match="return_mode"):
        stats.value("average")
    with pytest.raises(ValueError, match="quantiles"):
        stats.quantiles([1.5])


def test_stability_is_relative() -> None:
    assert is_stable(1.0, 1.04) and not is_stable(1.0, 1.2)
    assert is_stable(1.2, 1.0, tolerance=0.25)


def _scripted(times: list[float]) -> Any:
    """A time_calls that returns the scripted per-call times in order (the last repeats)."""
    source: Iterator[float] = iter(times)
    last = [times[-1]]

    def time_calls(count: int) -> list[float]:
        out = []
        for _ in range(count):
            last[0] = next(source, last[0])
            out.append(last[0])
        return out

    return time_calls


def test_warm_up_runs_until_the_time_settles() -> None:
    # Cold calls (10 ms, then 5 ms) before the kernel settles at 1 ms per call.
    calls, stable, settled_ms = warm_up(_scripted([10.0] * 3 + [5.0] * 3 + [1.0]), 1.0, 20.0)
    assert stable is True and settled_ms == 1.0
    assert calls == 15  # windows of 5 (a quarter of 20 ms): medians 10, 1, 1


def test_warm_up_gives_up_and_says_so() -> None:
    drifting = [float(v) for v in range(1, 400)]  # never settles
    calls, stable, _ = warm_up(_scripted(drifting), 1.0, 4.0)
    assert stable is False and calls >= 3
    assert warm_up(_scripted([1.0]), 1.0, 0.0) == (0, None, 1.0)


class _FakeClock:
    """A clock that advances by the scripted duration of each call (seconds)."""

    def __init__(self, per_call_ms: list[float]) -> None:
        self.durations = iter(per_call_ms)
        self.now = 0.0
        self.started = False

    def __call__(self) -> float:
        if self.started:
            self.now += next(self.durations, 1.0) * 1e-3
        self.started = not self.started
        return self.now


def test_measure_reports_the_median_not_the_mean() -> None:
    # warm-up of 0: one sizing call, then 5 timed calls of which one is preempted (90 ms)
    clock = _FakeClock([1.0, 1.0, 1.0, 90.0, 1.0, 1.0])
    stats = measure(lambda: None, warmup=0, rep=5, clock=clock, device="cpu")
    assert isinstance(stats, TimingStats)
    assert stats.samples_ms == pytest.approx((1.0, 1.0, 90.0, 1.0, 1.0))
    assert stats.median_ms == pytest.approx(1.0) and stats.outliers == 1
    assert stats.warmup_stable is None and stats.warmup_calls == 1


def test_do_bench_defaults_to_the_median(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake_measure(fn: Any, **kwargs: Any) -> TimingStats:
        seen.update(kwargs)
        return summarize([1.0, 1.0, 1.0, 1.0, 50.0])

    monkeypatch.setattr("tl_jit.profiler_bench.measure", fake_measure)
    assert do_bench(lambda: None) == 1.0
    assert do_bench(lambda: None, return_mode="mean") == pytest.approx(10.8)
    assert seen["warmup"] == 25.0 and seen["rep"] == 100.0


def test_measure_validates_before_calling() -> None:
    calls: list[int] = []
    for kwargs in ({"rep": 0}, {"warmup": -1}, {"flops": 0}, {"max_repeats": 0}):
        with pytest.raises(ValueError):
            measure(lambda: calls.append(1), **kwargs)  # type: ignore[arg-type]
    assert not calls


@pytest.mark.parametrize("name", ["rep", "warmup", "max_warmup", "flops", "bytes"])
@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_measure_refuses_a_window_or_work_that_is_not_finite_by_name(
    name: str, value: float
) -> None:
    # rep=nan or warmup=inf reached int() after calls had run: "cannot convert float NaN
    # to integer", naming nothing; max_warmup=nan and flops=inf were taken.
    calls: list[int] = []
    with pytest.raises(ValueError, match=rf"^{name}: expected a finite number"):
        measure(lambda: calls.append(1), device="cpu", **{name: value})  # type: ignore[arg-type]
    assert not calls


def test_measure_times_real_calls() -> None:
    stats = measure(lambda: sum(range(100)), warmup=1, rep=2, device="cpu", flops=100)
    assert len(stats.samples_ms) >= timing.MIN_SAMPLES
    assert stats.min_ms <= stats.median_ms <= stats.max_ms
    assert stats.warmup_calls >= 4 and stats.warmup_stable is not None
    assert "FLOP/s" in stats.summary()


def test_a_cache_flush_counts_in_the_warmup_and_rep_windows() -> None:
    # Sized by the (near-empty) call alone, this ran 100,000 warm-up calls and as
    # many timed ones, each behind a 64 MiB flush: minutes for a 1 ms window.
    from tl_jit.timing import measure

    stats = measure(lambda: None, warmup=5.0, rep=1.0, flush_cache=True)
    assert stats.warmup_calls < 1000
    assert len(stats.samples_ms) < 1000
