"""TileLang's autotuning surface beyond the decorator's basic options, on the C backend:
``AutoTuner.from_kernel(...).set_compile_args(...).set_profile_args(...).run(...)``,
the reserved config key ``pass_configs``, ``manual_check_prog``,
``max_mismatched_ratio``, ``supply_type`` and ``early_stop`` (the sweep of TileLang's
gemm autotune examples found each missing)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tl_jit
import tl_jit.language as T
from tl_jit.autotuner import AutoTuner, autotune
from tl_jit.errors import AutotuneError
from tl_jit.tune_timing import Measurement


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TL_CACHE_DIR", str(tmp_path / "cache"))


def scale_builder(n: int) -> Any:
    """A builder of ``B = A * factor`` (the tuned ``block`` changes nothing else)."""

    def kernel(block: int = 16, factor: float = 2.0) -> Any:
        @T.prim_func
        def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
            with T.Kernel(T.ceildiv(n, block), threads=1) as bx:
                for i in T.serial(block):
                    if bx * block + i < n:
                        B[bx * block + i] = A[bx * block + i] * factor

        return main

    return kernel


def double(a: Any) -> Any:
    return a * 2.0


def test_from_kernel_chain_tunes_a_builder_and_returns_the_result() -> None:
    result = (
        AutoTuner.from_kernel(kernel=scale_builder(100), configs=[{"block": 16}, {"block": 32}])
        .set_compile_args(out_idx=[-1], target="c")
        .set_profile_args(ref_prog=double, skip_check=False)
        .run(warmup=1, rep=3)
    )
    assert result.config in ({"block": 16}, {"block": 32})
    assert result.latency is not None and result.latency > 0
    assert result.ref_latency is not None and result.ref_latency > 0
    assert result.libcode and result.func is not None
    a = np.arange(100, dtype=np.float32)
    np.testing.assert_array_equal(result.kernel(a), 2 * a)


def test_from_kernel_refuses_multi_gpu_timing_by_name() -> None:
    tuning = AutoTuner.from_kernel(kernel=scale_builder(8), configs=[{"block": 8}])
    with pytest.raises(NotImplementedError, match="benchmark_multi_gpu"):
        tuning.set_compile_args(out_idx=[-1], target="c").run(benchmark_multi_gpu=True)


def test_a_configs_pass_configs_reach_its_build() -> None:
    # TileLang reserves the key: per-configuration pass configs, merged over @jit's. The
    # first configuration's unknown key fails its build (so they reach it); the second wins.
    configs = [
        {"block": 16, "pass_configs": {"tl.no_such_key": 1}},
        {"block": 32, "pass_configs": {"tl.disable_warp_specialized": True}},
    ]
    tuned = autotune(configs=configs, warmup=1, rep=3, ref_prog=double, max_workers=1)(
        tl_jit.jit(out_idx=[-1], target="c")(scale_builder(64))
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernel = tuned()
    assert "unknown TileLang key 'tl.no_such_key'" in str(tuned.results[0].error)
    assert kernel.config == configs[1]
    a = np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(kernel(a), 2 * a)


def test_pass_configs_that_are_not_a_dict_fail_their_configuration() -> None:
    tuned = autotune(
        configs=[{"block": 16, "pass_configs": 3}, {"block": 32}], warmup=1, rep=3, max_workers=1
    )(tl_jit.jit(out_idx=[-1], target="c")(scale_builder(64)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernel = tuned()
    assert kernel.config == {"block": 32}
    assert "expected a dict of pass configs, got int" in str(tuned.results[0].error)


def test_manual_check_prog_judges_each_configuration() -> None:
    seen: list[tuple[int, int]] = []

    def only_exact(kernel_outputs: list[Any], reference_outputs: list[Any]) -> None:
        seen.append((len(kernel_outputs), len(reference_outputs)))
        np.testing.assert_array_equal(kernel_outputs[0], reference_outputs[0])

    # factor 3.0 is wrong against the reference: that configuration fails alone.
    tuned = autotune(
        configs=[{"factor": 3.0}, {"factor": 2.0}],
        warmup=1,
        rep=3,
        ref_prog=double,
        manual_check_prog=only_exact,
        max_workers=1,
        isolate_timing=False,
    )(tl_jit.jit(out_idx=[-1], target="c")(scale_builder(32)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernel = tuned()
    assert kernel.config == {"factor": 2.0}
    assert tuned.results[0].error is not None and "Arrays are not equal" in tuned.results[0].error
    assert seen and all(pair == (1, 1) for pair in seen)


def test_max_mismatched_ratio_allows_a_share_of_elements() -> None:
    def almost(a: Any) -> Any:
        expected = a * 2.0
        expected[0] += 100.0  # one element of 200 differs: 0.5%
        return expected

    def tuned_with(ratio: float) -> Any:
        return autotune(
            configs=[{"block": 16}],
            warmup=1,
            rep=3,
            ref_prog=almost,
            max_mismatched_ratio=ratio,
            max_workers=1,
            isolate_timing=False,
            cache_results=False,
        )(tl_jit.jit(out_idx=[-1], target="c")(scale_builder(200)))

    assert tuned_with(0.01)().config == {"block": 16}  # TileLang's default share
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(AutotuneError, match="1 of 200"):
            tuned_with(0.0)()


class LoggingTimer:
    """Records each timing window asked for and answers a fixed time per block."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, float]] = []

    def __call__(self, measurement: Measurement) -> float:
        block = int(measurement.config["block"])
        self.calls.append((block, measurement.rep))
        return {8: 1.0, 16: 10.0, 32: 1.5}[block]


@pytest.mark.parametrize("early_stop", [True, False])
def test_early_stop_skips_the_full_timing_of_a_slow_configuration(early_stop: bool) -> None:
    timer = LoggingTimer()
    tuned = autotune(
        configs=[{"block": 8}, {"block": 16}, {"block": 32}],
        warmup=1,
        rep=50,
        max_workers=1,
        isolate_timing=False,
        cache_results=False,
        timer=timer,
        early_stop=early_stop,
        early_stop_factor=2.0,
    )(tl_jit.jit(out_idx=[-1], target="c")(scale_builder(64)))
    assert tuned().config == {"block": 8}
    if early_stop:
        # The first has nothing to compare with; 16's estimate (a 1 ms window) of 10 ms
        # is over 2 x 1 ms, so it stands; 32's 1.5 ms is not, so 32 is timed in full.
        assert timer.calls[:4] == [(8, 50), (16, 1.0), (32, 1.0), (32, 50)]
    else:
        assert timer.calls[:3] == [(8, 50), (16, 50), (32, 50)]
    # The re-measurement of the finalists afterwards always takes full windows.
    assert all(rep == 50 for _, rep in timer.calls[4 if early_stop else 3 :])


def test_the_new_options_are_checked_by_name() -> None:
    for options, message in (
        ({"max_mismatched_ratio": 2}, "max_mismatched_ratio"),
        ({"manual_check_prog": 3}, "manual_check_prog"),
        ({"early_stop": "yes"}, "early_stop"),
        ({"early_stop": True, "early_stop_factor": 0.5}, "early_stop_factor"),
        ({"supply_type": "Sideways"}, "Sideways"),
    ):
        with pytest.raises((TypeError, ValueError), match=message):
            autotune(configs=[{"block": 8}], **options)


SYMBOLIC_MODULE = """
import tl_jit
import tl_jit.language as T


def double(a):
    return a * 2.0


@tl_jit.autotune(configs=[{"block": 16}, {"block": 32}], warmup=1, rep=3, ref_prog=double)
@tl_jit.jit(out_idx=[-1], target="c")
def scaled(n, block=16):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=1) as bx:
            for i in T.serial(block):
                if bx * block + i < n:
                    B[bx * block + i] = A[bx * block + i] * 2.0

    return main
"""


def test_a_symbolic_argument_is_tuned_in_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # TileLang's test_autotune_matmul_symbolic_m: the worker pool pickled the T.symbolic
    # dim, a TVM IR object whose serialization crashed the process (segfault); a
    # module-level builder is otherwise built by worker processes.
    from tl_jit.autotuner import set_autotune_inputs

    (tmp_path / "symbolic_tuned.py").write_text(SYMBOLIC_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import symbolic_tuned

    a = np.arange(100, dtype=np.float32)
    with set_autotune_inputs([a]):
        kernel = symbolic_tuned.scaled(T.symbolic("n"))
    assert [r.error for r in symbolic_tuned.scaled.results] == [None, None]
    np.testing.assert_array_equal(kernel(a), 2 * a)
