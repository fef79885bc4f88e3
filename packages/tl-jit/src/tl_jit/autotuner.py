"""``@autotune``: compile a jit kernel (builder or eager style) for several configurations,
each in a worker that may fail alone, check and time each, re-measure the fastest few and
return the winner (results kept with the disk cache, docs/autotune.md)."""

from __future__ import annotations

import contextlib
import inspect
import os
import traceback
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tl_jit import env
from tl_jit.autotune_inputs import (
    AutotuneInputsCapture as AutotuneInputsCapture,
)
from tl_jit.autotune_inputs import CapturedInputs, get_autotune_inputs
from tl_jit.autotune_inputs import set_autotune_inputs as set_autotune_inputs
from tl_jit.by_reference import CopiedAsItself, reduce_by_reference
from tl_jit.decorator import JITFunction
from tl_jit.errors import AutotuneError
from tl_jit.kernel import JITKernel
from tl_jit.profiler_inputs import checked_dims
from tl_jit.tensor_supply import TensorSupplyType
from tl_jit.tune_executor import Executor, TaskFailure
from tl_jit.tune_keys import call_shapes, result_key
from tl_jit.tune_measure import reference_latency
from tl_jit.tune_options import (
    TuningChecks,
    check_flags,
    check_measurement,
    check_options,
    tuning_checks,
)
from tl_jit.tune_search import SearchPlacement, compile_all, time_all, travels
from tl_jit.tune_tasks import TimingRequest, compile_jit_function
from tl_jit.tune_timing import Timer, pick_after_remeasure

if TYPE_CHECKING:
    from tl_jit.tune_chain import KernelTuning

Configs = Sequence[Mapping[str, Any]] | Callable[..., Sequence[Mapping[str, Any]]]
WORKERS_ENV = "TL_AUTOTUNE_WORKERS"

DEFAULT_CONFIG_TIMEOUT_S = 600.0
"""The default time limit of one configuration's build (seconds)."""


class AutotuneWarning(UserWarning):
    """A configuration failed to compile, run or pass its check and was skipped."""


@dataclass(frozen=True)
class ConfigResult:
    """One configuration's outcome: its latency in ms, or why it was skipped."""

    config: dict[str, Any]
    latency: float | None
    error: str | None = None


class AutoTuner(CopiedAsItself):
    """What ``@autotune`` returns.

    For a builder (a function of compile-time arguments returning a PrimFunc), call it
    with the non-tuned arguments to get the best `JITKernel`. For an eager kernel
    (``T.const``/``T.empty``), call it like the kernel: the first call for a
    specialization tunes, then every call runs the winner on its tensors;
    ``.compile(...)`` returns the winning `JITKernel` itself.

    The returned `JITKernel` has ``.config`` (the winning configuration) and
    ``.latency`` (its median time per call in ms over the first pass and the
    re-measurement); ``.results`` holds every configuration's outcome of the last
    tuning run.
    """

    def __init__(
        self,
        jit_function: Any,
        configs: Configs,
        *,
        warmup: float,
        rep: float,
        ref_prog: Callable[..., Any] | None,
        supply_prog: Callable[[Sequence[Any]], Sequence[Any]] | None,
        rtol: float,
        atol: float,
        skip_check: bool,
        max_workers: int | None,
        dims: Mapping[str, int] | None,
        cache_results: bool,
        executor: Executor | None = None,
        timeout: float | None = DEFAULT_CONFIG_TIMEOUT_S,
        timer: Timer | None = None,
        isolate_timing: bool | None = None,
        checks: TuningChecks | None = None,
    ) -> None:
        from tl_jit.eager import EagerJITFunction

        if not isinstance(jit_function, JITFunction | EagerJITFunction):
            raise TypeError(
                f"autotune: expected a @tl_jit.jit function (stack @autotune above @jit), "
                f"got {jit_function!r}"
            )
        check_options(executor, timeout, timer, isolate_timing, max_workers)
        check_flags(skip_check, cache_results)
        self.jit_function: Any = jit_function
        self.eager = isinstance(jit_function, EagerJITFunction)
        self.configs = configs
        self.warmup = warmup
        self.rep = rep
        self.ref_prog = ref_prog
        self.supply_prog = supply_prog
        self.rtol = rtol
        self.atol = atol
        self.skip_check = skip_check
        self.max_workers = max_workers
        self.dims = checked_dims(dims)
        self.cache_results = cache_results
        self.executor = executor
        self.timeout = None if timeout is None else float(timeout)
        self.timer = timer
        self.isolate_timing = isolate_timing
        self.checks = checks if checks is not None else TuningChecks()
        self.results: list[ConfigResult] = []
        self._best: dict[str, JITKernel] = {}
        self.__wrapped__ = jit_function.func
        self.__doc__ = jit_function.func.__doc__
        self.__module__ = jit_function.func.__module__
        self.__qualname__ = jit_function.func.__qualname__

    def __reduce__(self) -> Any:
        """Pickled by reference (module and qualified name), as a function is."""
        return reduce_by_reference(self, self.jit_function.func, "the @autotune function")

    @classmethod
    def from_kernel(cls, kernel: Callable[..., Any], configs: Configs) -> KernelTuning:
        """TileLang's programmatic tuning: ``AutoTuner.from_kernel(kernel=fn,
        configs=...)`` then ``.set_compile_args(...)``, ``.set_profile_args(...)`` and
        ``.run(...)``, which returns a `tl_jit.tune_chain.AutotuneResult`. ``kernel`` is
        a builder (undecorated): a function of the configs' arguments returning a
        PrimFunc."""
        from tl_jit.tune_chain import KernelTuning

        if not callable(kernel):
            raise TypeError(f"AutoTuner.from_kernel: kernel: expected a function, got {kernel!r}")
        return KernelTuning(kernel, configs)

    def _config_list(self, arguments: Mapping[str, Any]) -> list[dict[str, Any]]:
        configs = self.configs(**arguments) if callable(self.configs) else self.configs
        if not isinstance(configs, Iterable) or isinstance(configs, str | bytes | Mapping):
            raise TypeError(
                "configs: expected the configs callable to return a list of dicts, got "
                f"{type(configs).__name__}"
            )
        result = []
        for config in configs:
            if not isinstance(config, Mapping):
                raise TypeError(f"configs: expected dicts of argument values, got {config!r}")
            result.append(dict(config))
        if not result:
            raise ValueError("configs: expected at least one configuration, got none")
        return result

    def _workers(self, count: int) -> int:
        if self.max_workers is not None:
            if self.max_workers < 1:
                raise ValueError(f"max_workers: expected an int >= 1, got {self.max_workers!r}")
            return min(self.max_workers, count)
        capacity = getattr(self.executor, "max_workers", None)
        if self.executor is not None and isinstance(capacity, int) and capacity > 0:
            return min(capacity, count)
        configured = os.environ.get(WORKERS_ENV)
        if configured and configured.isdigit() and int(configured) > 0:
            return min(int(configured), count)
        return max(1, min(os.cpu_count() or 1, count))

    def _eager_arguments(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """An eager kernel's template arguments and ``T.const`` values, by name."""
        templates, consts, _ = self.jit_function._bind(args, kwargs, need_tensors=False)
        # Strings by their text (a dtype object pickles as its name to workers).
        plain = {k: str(v) if isinstance(v, str) else v for k, v in templates.items()}
        return {**plain, **consts}

    def _explicit_names(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> set[str]:
        try:
            bound = inspect.signature(self.jit_function.func).bind_partial(*args, **kwargs)
        except TypeError:
            return set(kwargs)
        return set(bound.arguments) | set(kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Tune for these (non-tuned) arguments; a builder returns the fastest kernel, an
        eager kernel runs it on the call's tensors and returns its outputs.

        A call that passes any tuned argument itself (a name that appears in the
        configs) skips tuning and uses exactly those arguments, as TileLang does.

        Raises:
            AutotuneError: no configuration compiled, ran and passed the check (the
                message lists each failure).
            TypeError, ValueError: malformed configs or arguments.
            KeyboardInterrupt: after cancelling every outstanding configuration.
        """
        if not self.eager:
            return self.compile(*args, **kwargs)
        arguments = self._eager_arguments(args, kwargs)
        configs = self._config_list(arguments)
        if {name for config in configs for name in config} & self._explicit_names(args, kwargs):
            return self.jit_function(*args, **kwargs)
        best = self._best_for(arguments, configs, call_shapes(self, args, kwargs))
        assert best.config is not None
        return self.jit_function(*args, **{**kwargs, **best.config})

    def compile(self, *args: Any, **kwargs: Any) -> JITKernel:
        """The fastest kernel for these arguments (tuning first if needed); for an eager
        kernel the arguments are as `EagerJITFunction.compile` takes them (tensors or
        ``T.const`` values by keyword).

        Raises:
            as `__call__`.
        """
        if self.eager:
            arguments = self._eager_arguments(args, kwargs)
        else:
            # Bound as a call of the function binds them: too many positional arguments, or
            # one given twice, is the TypeError a plain call raises (never dropped or
            # overridden in silence); tuned names left out are filled from the configs.
            try:
                bound = self.jit_function._signature.bind_partial(*args, **kwargs)
            except TypeError as exc:
                raise TypeError(f"{self.jit_function.func.__qualname__}: {exc}") from None
            arguments = {}
            for name, value in bound.arguments.items():
                kind = self.jit_function._signature.parameters[name].kind
                if kind is inspect.Parameter.VAR_KEYWORD:
                    arguments.update(value)  # **options: each by its own name
                else:
                    arguments[name] = value
        configs = self._config_list(arguments)
        tuned_names = {name for config in configs for name in config}
        explicit = self._explicit_names(args, kwargs) if self.eager else set(arguments)
        if tuned_names & explicit:
            # As in TileLang: a call that already passes tuned arguments is not tuned;
            # it compiles what it asks for (the function's defaults fill the rest).
            return compile_jit_function(self.jit_function, arguments)
        return self._best_for(arguments, configs, call_shapes(self, args, kwargs))

    def _best_for(
        self,
        arguments: Mapping[str, Any],
        configs: list[dict[str, Any]],
        call_shapes: Mapping[str, tuple[int, ...]] | None = None,
    ) -> JITKernel:
        from tl_jit import tune_records

        memo = repr(sorted(arguments.items()))
        if memo in self._best:
            return self._best[memo]
        captured = get_autotune_inputs()
        key = result_key(self, arguments, configs, captured) if self.cache_results else None
        use_disk = key is not None and not env.cache_disabled()
        if use_disk:
            assert key is not None
            saved = tune_records.load(key)
            if saved is not None:
                kernel = self._from_saved(saved, arguments)
                if kernel is not None:
                    self._best[memo] = kernel
                    return kernel
        kernel = self._tune(arguments, configs, call_shapes or {}, captured)
        if use_disk and kernel.config is not None:
            assert key is not None
            tune_records.save(
                key,
                function=self.jit_function.func.__qualname__,
                target=str(self.jit_function._frontend_options({}).get("target")),
                best_config=kernel.config,
                latency=kernel.latency,
                ref_latency=kernel.ref_latency,
                results=[
                    {"config": r.config, "latency": r.latency, "error": r.error}
                    for r in self.results
                ],
            )
        self._best[memo] = kernel
        return kernel

    def _from_saved(self, record: Mapping[str, Any], arguments: Mapping[str, Any]) -> JITKernel:
        config = record["best_config"]
        latency = record.get("latency")
        kernel = _tuned(
            compile_jit_function(self.jit_function, {**arguments, **config}),
            dict(config),
            float(latency) if isinstance(latency, int | float) else None,
        )
        ref_latency = record.get("ref_latency")
        kernel.ref_latency = float(ref_latency) if isinstance(ref_latency, int | float) else None
        self.results = [
            ConfigResult(dict(r["config"]), r.get("latency"), r.get("error"))
            for r in record.get("results", [])
            if isinstance(r, dict) and isinstance(r.get("config"), dict)
        ]
        return kernel

    # ------------------------------------------------------------------ timing
    def _request(
        self,
        call_shapes: Mapping[str, tuple[int, ...]],
        rounds: int = 1,
        captured: list[Any] | None = None,
    ) -> TimingRequest:
        supply_prog = self.supply_prog
        if captured is not None:
            if supply_prog is not None:
                warnings.warn(
                    f"autotune {self.jit_function.func.__qualname__}: supply_prog is ignored "
                    "inside a set_autotune_inputs block (its inputs are used)",
                    UserWarning,
                    stacklevel=5,
                )
            supply_prog = CapturedInputs(tuple(captured))
        return TimingRequest(
            warmup=self.warmup,
            rep=self.rep,
            dims=dict(self.dims),
            call_shapes=dict(call_shapes),
            max_mismatched_ratio=self.checks.max_mismatched_ratio,
            manual_check_prog=self.checks.manual_check_prog,
            supply_type=self.checks.supply_type,
            early_stop_factor=self.checks.early_stop_factor,
            ref_prog=self.ref_prog,
            supply_prog=supply_prog,
            rtol=self.rtol,
            atol=self.atol,
            skip_check=self.skip_check,
            rounds=rounds,
            timer=self.timer,
        )

    def _tune(
        self,
        arguments: Mapping[str, Any],
        configs: list[dict[str, Any]],
        call_shapes: Mapping[str, tuple[int, ...]],
        captured: list[Any] | None = None,
    ) -> JITKernel:
        placement = SearchPlacement(
            jit_function=self.jit_function,
            executor=self.executor,
            # Arguments that cannot travel to a worker (a T.symbolic dim is a TVM IR
            # object, which does not pickle) are built with here, as TileLang does.
            max_workers=self.max_workers if travels(arguments, configs) else 1,
            in_flight=self._workers(len(configs)),
            timeout_s=self.timeout,
            isolate_timing=self.isolate_timing,
        )
        with contextlib.ExitStack() as pools:
            build_pool = placement.build_pool(pools)
            compiled = compile_all(placement, arguments, configs, build_pool)
            failures: dict[int, TaskFailure] = {
                i: o for i, o in enumerate(compiled) if isinstance(o, TaskFailure)
            }
            built = {i: o for i, o in enumerate(compiled) if not isinstance(o, TaskFailure)}
            latencies: dict[int, float] = {}
            winner: int | None = None
            if built:
                timings, timing_failures, remeasure = time_all(
                    placement,
                    built,
                    configs,
                    self._request(call_shapes, 1, captured),
                    build_pool,
                    pools,
                )
                failures.update(timing_failures)
                if timings:
                    winner, latencies = pick_after_remeasure(timings, remeasure)
        results: list[ConfigResult] = []
        for index, config in enumerate(configs):
            if index in failures:
                results.append(self._skip(config, failures[index]))
            else:
                results.append(ConfigResult(config, latencies.get(index)))
        self.results = results
        if winner is None:
            detail = "\n".join(f"  {r.config}: {r.error}" for r in results)
            raise AutotuneError(
                f"autotune {self.jit_function.func.__qualname__}: every configuration "
                f"failed:\n{detail}"
            )
        tuned = _tuned(built[winner][0], configs[winner], latencies[winner])
        tuned.ref_latency = reference_latency(tuned, self._request(call_shapes, 1, captured))
        return tuned

    def _skip(self, config: dict[str, Any], failure: TaskFailure) -> ConfigResult:
        message = failure.reason
        if os.environ.get("TL_AUTOTUNE_TRACEBACK") and failure.exception is not None:
            message += "\n" + "".join(traceback.format_exception(failure.exception))
        warnings.warn(
            f"autotune {self.jit_function.func.__qualname__}: config {config} skipped "
            f"({failure.stage} failed): {message}",
            AutotuneWarning,
            stacklevel=5,
        )
        return ConfigResult(config, None, f"{failure.stage} failed: {message}")


def autotune(
    configs: Configs,
    warmup: float = 25.0,
    rep: float = 100.0,
    ref_prog: Callable[..., Any] | None = None,
    rtol: float = 1e-2,
    atol: float = 1e-2,
    skip_check: bool = False,
    *,
    supply_prog: Callable[[Sequence[Any]], Sequence[Any]] | None = None,
    max_workers: int | None = None,
    dims: Mapping[str, int] | None = None,
    cache_results: bool = True,
    executor: Executor | None = None,
    timeout: float | None = DEFAULT_CONFIG_TIMEOUT_S,
    timer: Timer | None = None,
    isolate_timing: bool | None = None,
    max_mismatched_ratio: float = 0.01,
    manual_check_prog: Callable[[list[Any], list[Any]], Any] | None = None,
    supply_type: TensorSupplyType | str | None = None,
    cache_input_tensors: bool = False,
    early_stop: bool = False,
    early_stop_factor: float = 2.0,
) -> Callable[[Any], AutoTuner]:
    """Decorator stacked above ``@tl_jit.jit``: pick the fastest of ``configs``.

    Args:
        configs: a list of dicts (each maps some of the jit function's arguments to values),
            or a callable taking the non-tuned arguments and returning such a list.
        warmup: ms of warmup per configuration.
        rep: ms of timed calls per configuration.
        ref_prog: reference implementation; each configuration's output is checked
            against it (unless ``skip_check``).
        rtol, atol: tolerances of that check.
        skip_check: do not check against ``ref_prog``.
        supply_prog: makes the inputs from the kernel's params (default: random ones;
            inside a `set_autotune_inputs` block, that block's inputs).
        max_workers: configurations built at once: worker processes of the default
            executor (default ``TL_AUTOTUNE_WORKERS`` or min(cores, configs); 1 compiles
            in this process, without isolation), or tasks in flight on ``executor``
            (default: its ``max_workers`` when it has one).
        dims: sizes of symbolic dims for the generated inputs.
        cache_results: keep the result with the disk cache and reuse it next time (in
            any process with the same key; ``tl cache tuning`` lists them).
        executor: where configurations are built: any object with
            ``submit(fn, *args) -> concurrent.futures.Future`` (a ``ThreadPoolExecutor``,
            a `tl_jit.distributed.RayExecutor`...). Default: a pool of worker processes
            in which each configuration fails alone. An executor with
            ``submit_on_device`` also times the kernels there.
        timeout: the time limit of one configuration's build, and of its timing task
            when it is timed by a worker, in seconds (None: no limit); one that runs
            longer is cancelled (its local worker killed) and recorded.
        timer: how one configuration is timed: a function of a
            `tl_jit.tune_timing.Measurement` returning ms (default
            `tl_jit.tune_timing.default_timer`; `tl_jit.tune_timing.RecordedTimings`
            replays recorded times). It runs where the kernels are timed, so it must
            pickle when that is a worker.
        isolate_timing: time (and check) each kernel in a worker process, so a kernel
            that crashes when run fails its configuration alone: True always (on the
            build pool, or one worker process started for it), False never (this
            process), None (default) when the builds ran on the default worker pool and
            ``ref_prog``/``supply_prog``/``timer`` pickle. An executor with
            ``submit_on_device`` times on its device workers regardless.
        max_mismatched_ratio: the share of each output's elements allowed to differ
            beyond ``rtol``/``atol`` (TileLang's default, 1%).
        manual_check_prog: replaces the tolerance check: called with the kernel's
            outputs and the reference's (two lists), it raises to fail a configuration.
        supply_type: the `tl_jit.TensorSupplyType` of generated inputs (or its name).
        cache_input_tensors: accepted as TileLang has it; configurations whose kernels
            take the same parameters always share one set of inputs here (see
            `tl_jit.tune_options.tuning_checks`).
        early_stop: time each configuration first on a short window (at most
            `tl_jit.tune_tasks.EARLY_STOP_ESTIMATE_MS` ms of calls) and keep that
            estimate, without the full timing, when it is slower than
            ``early_stop_factor`` (>= 1) times the fastest configuration so far. The
            first pass then times one configuration at a time.

    Each configuration fails alone: one that does not compile, kills its worker (abort,
    segfault, ``os._exit``), runs past ``timeout``, fails its check or fails to run (or
    crashes its timing worker) is reported as an `AutotuneWarning`, recorded in ``.results`` with its reason and
    skipped. After the first timing pass the fastest few are timed again, interleaved,
    and the pick is made on the median of all their timings. Worker processes are
    started with ``spawn`` and import the module defining the function (a script needs
    an ``if __name__ == "__main__":`` guard, as with any multiprocessing program); a
    function defined inside another function is compiled in this process instead
    (without isolation or time limit). ``KeyboardInterrupt`` cancels every outstanding
    configuration (killing local workers) and propagates.
    """

    check_options(executor, timeout, timer, isolate_timing, max_workers)
    check_flags(skip_check, cache_results)
    check_measurement(configs, warmup, rep, ref_prog, supply_prog, rtol, atol)
    checks = tuning_checks(
        max_mismatched_ratio,
        manual_check_prog,
        supply_type,
        cache_input_tensors,
        early_stop,
        early_stop_factor,
    )

    def decorate(jit_function: Any) -> AutoTuner:
        return AutoTuner(
            jit_function,
            configs,
            warmup=warmup,
            rep=rep,
            ref_prog=ref_prog,
            supply_prog=supply_prog,
            rtol=rtol,
            atol=atol,
            skip_check=skip_check,
            max_workers=max_workers,
            dims=dims,
            cache_results=cache_results,
            executor=executor,
            timeout=timeout,
            timer=timer,
            isolate_timing=isolate_timing,
            checks=checks,
        )

    return decorate


def _tuned(kernel: JITKernel, config: dict[str, Any], latency: float | None) -> JITKernel:
    """The winner as the search returns it: a kernel of its own (the same loaded code)
    carrying ``config`` and ``latency``. The compiled kernel itself is shared with every
    plain call of those arguments (memoised), which must not report a tuning result."""
    tuned = JITKernel(
        kernel.runtime_kernel,
        prim_func=kernel.prim_func,
        context=kernel.context,
        cache_key=kernel.cache_key,
    )
    tuned.config = config
    tuned.latency = latency
    return tuned
