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
    assert len(scale.results) == 2
    assert len(list((cache_dir / "autotune").glob("*.json"))) == 1


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
