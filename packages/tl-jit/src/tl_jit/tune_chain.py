"""TileLang's programmatic autotuning: ``AutoTuner.from_kernel(kernel=fn, configs=...)
.set_compile_args(...).set_profile_args(...).run(...)``, built on ``@autotune`` over
``@jit`` (every rule of `tl_jit.autotuner.autotune` holds: each configuration fails
alone, the fastest few are timed again, the result is kept with the disk cache)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tl_jit.timing import check_timing_backend

__all__ = ["AutotuneResult", "KernelTuning"]


@dataclass
class AutotuneResult:
    """What `KernelTuning.run` found (TileLang's ``AutotuneResult``).

    Attributes:
        latency: the winner's time per call in ms.
        config: the winning configuration.
        ref_latency: the reference program's time per call in ms (None without one).
        libcode: the winner's generated source.
        func: the winner's PrimFunc.
        kernel: the winning `tl_jit.JITKernel`, ready to call.
    """

    latency: float | None = None
    config: dict[str, Any] | None = None
    ref_latency: float | None = None
    libcode: str | None = None
    func: Any = None
    kernel: Any = None


@dataclass
class KernelTuning:
    """One tuning of a kernel builder over ``configs``: TileLang's ``AutoTuner`` as
    ``AutoTuner.from_kernel`` makes it. Each ``set_*`` returns the object itself."""

    fn: Callable[..., Any]
    configs: Sequence[Mapping[str, Any]] | Callable[..., Sequence[Mapping[str, Any]]]
    compile_args: dict[str, Any] = field(default_factory=dict)
    profile_args: dict[str, Any] = field(default_factory=dict)

    def set_compile_args(
        self,
        out_idx: Any = None,
        target: Any = None,
        execution_backend: str | None = None,
        target_host: Any = None,
        verbose: bool | None = None,
        pass_configs: Mapping[str, Any] | None = None,
    ) -> KernelTuning:
        """The options of the ``@jit`` each configuration is built with (None: the
        defaults of `tl_jit.jit`)."""
        given = {
            "out_idx": out_idx,
            "target": target,
            "execution_backend": execution_backend,
            "target_host": target_host,
            "verbose": verbose,
            "pass_configs": pass_configs,
        }
        self.compile_args = {name: value for name, value in given.items() if value is not None}
        return self

    def set_profile_args(
        self,
        warmup: float = 25,
        rep: float = 100,
        timeout: float = 30,
        supply_type: Any = None,
        ref_prog: Callable[..., Any] | None = None,
        supply_prog: Callable[..., Any] | None = None,
        rtol: float = 1e-2,
        atol: float = 1e-2,
        max_mismatched_ratio: float = 0.01,
        skip_check: bool = False,
        manual_check_prog: Callable[..., Any] | None = None,
        cache_input_tensors: bool = False,
        backend: str = "event",
    ) -> KernelTuning:
        """How each configuration is checked and timed, as `tl_jit.autotuner.autotune`
        takes it; ``warmup``/``rep``/``timeout`` here are overridden by `run`'s, as in
        TileLang. ``backend`` names TileLang's GPU timer (one host timer here).

        Raises:
            ValueError: an unknown ``backend``.
        """
        check_timing_backend(backend)
        self.profile_args = {
            "supply_type": supply_type,
            "ref_prog": ref_prog,
            "supply_prog": supply_prog,
            "rtol": rtol,
            "atol": atol,
            "max_mismatched_ratio": max_mismatched_ratio,
            "skip_check": skip_check,
            "manual_check_prog": manual_check_prog,
            "cache_input_tensors": cache_input_tensors,
        }
        return self

    def run(
        self,
        warmup: float = 25,
        rep: float = 100,
        timeout: float = 180,
        use_pipeline: bool = False,
        enable_grouped_compile: bool = False,
        group_compile_size: int = 2,
        benchmark_devices: list[int] | None = None,
        benchmark_multi_gpu: bool = False,
        early_stop: bool = False,
        early_stop_factor: float = 2.0,
    ) -> AutotuneResult:
        """Build, check and time every configuration (``warmup``/``rep`` in ms, the
        ``timeout`` in seconds per configuration) and return the fastest.

        ``use_pipeline``, ``enable_grouped_compile`` and ``group_compile_size`` are
        TileLang's scheduling hints: builds run in worker processes here whatever they
        say. ``benchmark_devices``/``benchmark_multi_gpu`` are refused: timing on
        several devices goes through an executor with ``submit_on_device``
        (`tl_jit.autotuner.autotune`'s ``executor``).

        Raises:
            NotImplementedError: ``benchmark_multi_gpu=True`` or ``benchmark_devices``.
            tl_jit.errors.AutotuneError: no configuration built, ran and passed its check.
            TypeError, ValueError: bad options or configs (named).
        """
        from tl_jit.autotuner import autotune
        from tl_jit.decorator import jit

        if benchmark_multi_gpu or benchmark_devices:
            raise NotImplementedError(
                "AutoTuner.run(benchmark_multi_gpu=..., benchmark_devices=...): timing on "
                "several devices goes through autotune(executor=...) with an executor that "
                "has submit_on_device"
            )
        del use_pipeline, enable_grouped_compile, group_compile_size  # hints, see above
        jitted = jit(**self.compile_args)(self.fn)
        tuner = autotune(
            configs=self.configs,
            warmup=warmup,
            rep=rep,
            timeout=timeout,
            early_stop=early_stop,
            early_stop_factor=early_stop_factor,
            **self.profile_args,
        )(jitted)
        kernel = tuner.compile()
        return AutotuneResult(
            latency=kernel.latency,
            config=dict(kernel.config or {}),
            ref_latency=kernel.ref_latency,
            libcode=kernel.get_kernel_source(),
            func=kernel.prim_func,
            kernel=kernel,
        )
