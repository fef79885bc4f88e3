"""Autotuner: the known winner, failing configs skipped, worker processes, cached results."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

import tl_jit
from tl_jit.autotuner import AutotuneWarning
from tl_jit.errors import AutotuneError


def test_in_process_picks_the_cheap_config(fake_backend: Any, cache_dir: Path) -> None:
    @tl_jit.autotune(
        configs=[{"repeat": 3000}, {"repeat": 1}],
        warmup=1,
        rep=5,
        ref_prog=lambda a: a * 2.0,
        max_workers=1,
    )
    @tl_jit.jit(out_idx=-1, target="llvm")
    def scale(n: int, factor: float, repeat: int = 1) -> Any:
        return fake_backend.make_scale(n, factor, repeat)

    best = scale(4096, 2.0)
    assert best.config == {"repeat": 1}
    assert best.latency is not None and best.latency > 0
    assert best.ref_latency is not None and best.ref_latency > 0  # TileLang's ref_latency
    assert len(scale.results) == 2
    assert len(list((cache_dir / "autotune").glob("*.json"))) == 1
    scale._best.clear()  # as in a new process: the saved record keeps the figure
    assert scale(4096, 2.0).ref_latency == best.ref_latency


def test_worker_processes_skip_a_failing_config(fake_backend: Any, cache_dir: Path) -> None:
    import tljit_scale_kernel as module

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        best = module.tuned_scale(4096, 2.0)
    assert best.config == {"repeat": 1}
    failures = [w for w in caught if issubclass(w.category, AutotuneWarning)]
    assert len(failures) == 1 and "'fail': True" in str(failures[0].message)
    assert sum(r.error is not None for r in module.tuned_scale.results) == 1
    # A second tuner object (as in a new process) reads the saved result.
    again = tl_jit.autotune(
        configs=module.tuned_scale.configs,
        warmup=1,
        rep=5,
        ref_prog=module.reference,
        max_workers=2,
    )(module.scale)
    kernel = again(4096, 2.0)
    assert kernel.config == {"repeat": 1} and kernel.latency == pytest.approx(best.latency)


def test_all_configs_failing_is_an_error(fake_backend: Any) -> None:
    @tl_jit.autotune(configs=[{"factor": 1.0}], ref_prog=lambda a: a * 5, max_workers=1, rep=1)
    @tl_jit.jit(out_idx=-1, target="llvm")
    def scale(n: int, factor: float) -> Any:
        return fake_backend.make_scale(n, factor)

    with pytest.warns(AutotuneWarning), pytest.raises(AutotuneError, match="every configuration"):
        scale(64)


def test_autotune_needs_a_jit_function() -> None:
    with pytest.raises(TypeError, match=r"@tl_jit\.jit"):
        tl_jit.autotune(configs=[{}])(lambda: None)  # type: ignore[arg-type]


def test_a_timer_decides_on_the_times_it_gives(fake_backend: Any, cache_dir: Path) -> None:
    from tl_jit.tune_timing import Measurement, RecordedTimings

    seen: list[dict[str, Any]] = []
    recorded = RecordedTimings.of([({"repeat": 3000}, 0.5), ({"repeat": 1}, 2.0)])

    def timer(measurement: Measurement) -> float:
        # The kernel was built, loaded and checked before it is timed.
        assert len(measurement.kernel.params) == 2 and len(measurement.inputs) == 1
        seen.append(dict(measurement.config))
        return recorded(measurement)

    @tl_jit.autotune(
        configs=[{"repeat": 3000}, {"repeat": 1}, {"repeat": 2}],
        ref_prog=lambda a: a * 2.0,
        max_workers=1,
        cache_results=False,
        timer=timer,
    )
    @tl_jit.jit(out_idx=-1, target="llvm")
    def scale(n: int, factor: float, repeat: int = 1) -> Any:
        return fake_backend.make_scale(n, factor, repeat)

    with pytest.warns(AutotuneWarning, match="no time recorded for configuration"):
        best = scale(64, 2.0)
    # The slow kernel wins: the search decides on the timer's numbers only.
    assert best.config == {"repeat": 3000} and best.latency == 0.5
    assert [r.latency for r in scale.results] == [0.5, 2.0, None]
    assert {"repeat": 2} in seen and seen.count({"repeat": 3000}) == 4  # first pass + 3


def test_timer_and_isolation_options_are_checked(fake_backend: Any, cache_dir: Path) -> None:
    from tl_jit.tune_timing import RecordedTimings

    with pytest.raises(TypeError, match="autotune timer: expected a function"):
        tl_jit.autotune(configs=[{}], timer=3.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="isolate_timing: expected True, False or None"):
        tl_jit.autotune(configs=[{}], isolate_timing="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"expected a time in ms > 0 for \{'a': 1\}, got -1"):
        RecordedTimings.of([({"a": 1}, -1)])
    with pytest.raises(ValueError, match="appears twice"):
        RecordedTimings.of([({"a": 1, "b": 2}, 1.0), ({"b": 2, "a": 1}, 2.0)])

    @tl_jit.autotune(
        configs=[{"repeat": 1}],
        ref_prog=lambda a: a * 2.0,
        max_workers=1,
        cache_results=False,
        isolate_timing=True,
    )
    @tl_jit.jit(out_idx=-1, target="llvm")
    def scale(n: int, factor: float, repeat: int = 1) -> Any:
        return fake_backend.make_scale(n, factor, repeat)

    with pytest.raises(TypeError, match="isolate_timing=True: ref_prog, supply_prog and timer"):
        scale(64, 2.0)

    @tl_jit.autotune(
        configs=[{"repeat": 1}], max_workers=1, cache_results=False, timer=lambda m: 0.0
    )
    @tl_jit.jit(out_idx=-1, target="llvm")
    def zero(n: int, factor: float, repeat: int = 1) -> Any:
        return fake_backend.make_scale(n, factor, repeat)

    expected = r"autotune timer: expected a time in ms > 0, got 0.0"
    with pytest.raises(AutotuneError, match=expected), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zero(64, 2.0)


@pytest.mark.slow  # starts a worker process (about 10 s here); the default pool's case
# runs in test_autotune_faults.py
def test_isolated_timing_survives_a_kernel_that_crashes_when_run(
    fake_backend: Any, cache_dir: Path
) -> None:
    import tljit_scale_kernel as module

    tuned = tl_jit.autotune(
        # The crash comes last, so no replacement worker is waited for.
        configs=[{"repeat": 1}, {"repeat": 1, "crash": "segfault-when-run"}],
        warmup=1,
        rep=2,
        ref_prog=module.reference,
        max_workers=1,  # built here; timed by one worker process started for it
        cache_results=False,
        isolate_timing=True,
    )(module.fragile_scale)
    expected = r"skipped \(timing failed\): its worker process died \(SIGSEGV\)"
    with pytest.warns(AutotuneWarning, match=expected):
        best = tuned(256, 2.0)
    assert best.config == {"repeat": 1}
    assert [r.error is None for r in tuned.results] == [True, False]


def test_a_tuned_call_binds_its_arguments_as_a_plain_call_does(fake_backend: Any) -> None:
    """Too many positional arguments, or one also given by keyword, is the plain call's
    TypeError; the tuner used to drop the extras, and let the positional value win over
    the keyword (a kernel for n=4096 where the call said n=1024 too)."""

    @tl_jit.autotune(configs=[{"repeat": 1}], warmup=1, rep=2, max_workers=1)
    @tl_jit.jit(out_idx=-1, target="llvm")
    def scale(n: int, factor: float, repeat: int = 1) -> Any:
        return fake_backend.make_scale(n, factor, repeat)

    with pytest.raises(TypeError, match="too many positional arguments"):
        scale(4096, 2.0, 1, 5)
    with pytest.raises(TypeError, match="multiple values for argument 'n'"):
        scale(4096, 2.0, n=1024)


def test_a_plain_call_of_the_winners_arguments_reports_no_tuning(fake_backend: Any) -> None:
    """The winner carries .config/.latency; the memoised kernel a plain call of the same
    arguments returns does not (it showed the search's result as its own)."""

    @tl_jit.jit(out_idx=-1, target="llvm")
    def scale(n: int, factor: float, repeat: int = 1) -> Any:
        return fake_backend.make_scale(n, factor, repeat)

    tuned = tl_jit.autotune(configs=[{"repeat": 1}, {"repeat": 2}], warmup=1, rep=2, max_workers=1)
    best = tuned(scale)(4096, 2.0)
    assert best.config is not None and best.latency is not None
    plain = scale(4096, 2.0, repeat=best.config["repeat"])
    assert plain is not best and plain.config is None and plain.latency is None
    assert plain.runtime_kernel is best.runtime_kernel  # the same loaded code


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"configs": None}, TypeError, "configs: expected a list of dicts"),
        ({"rep": 0}, ValueError, "rep: expected a number of milliseconds > 0"),
        ({"warmup": -1}, ValueError, "warmup: expected a finite number"),
        ({"rep": float("nan")}, ValueError, "rep: expected a finite number"),
        ({"ref_prog": 5}, TypeError, "ref_prog: expected a callable or None"),
        ({"rtol": -1.0}, ValueError, "rtol: expected a finite number >= 0"),
    ],
)
def test_options_every_configuration_would_fail_on_are_refused_at_once(
    options: dict[str, Any], error: type[Exception], match: str
) -> None:
    """They used to surface only after every configuration had compiled, as 'every
    configuration failed'."""
    with pytest.raises(error, match=match):
        tl_jit.autotune(**{"configs": [{"repeat": 1}], **options})
