"""``@autotune``: compile a jit kernel for several configurations in worker processes,
check and time each, and return the fastest (results cached on disk as JSON)."""

from __future__ import annotations

import concurrent.futures
import contextlib
import importlib
import importlib.util
import multiprocessing
import os
import shutil
import sys
import tempfile
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tl_jit import env
from tl_jit.decorator import JITFunction
from tl_jit.errors import AutotuneError
from tl_jit.kernel import JITKernel

Configs = Sequence[Mapping[str, Any]] | Callable[..., Sequence[Mapping[str, Any]]]
WORKERS_ENV = "TL_AUTOTUNE_WORKERS"


class AutotuneWarning(UserWarning):
    """A configuration failed to compile, run or pass its check and was skipped."""


@dataclass(frozen=True)
class ConfigResult:
    """One configuration's outcome: its latency in ms, or why it was skipped."""

    config: dict[str, Any]
    latency: float | None
    error: str | None = None


def _function_reference(jit_function: JITFunction) -> tuple[str, str, str] | None:
    """How a worker process finds the jit function again: (module, file, attribute path)."""
    func = jit_function.func
    module_name = getattr(func, "__module__", None)
    qualname = getattr(func, "__qualname__", "")
    if not module_name or "<locals>" in qualname:
        return None
    module = sys.modules.get(module_name)
    file = getattr(module, "__file__", None)
    if module_name == "__main__" and not file:
        return None
    return module_name, file or "", qualname


def _resolve_in_worker(reference: tuple[str, str, str]) -> JITFunction:
    module_name, file, qualname = reference
    if module_name in ("__main__", "__mp_main__"):
        module = sys.modules.get("__mp_main__")
        if module is None or getattr(module, "__file__", None) != file:
            spec = importlib.util.spec_from_file_location("__tl_autotune_main__", file)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot load {file}")
            module = importlib.util.module_from_spec(spec)
            sys.modules["__tl_autotune_main__"] = module
            spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_name)
    value: Any = module
    for part in qualname.split("."):
        value = getattr(value, part)
    while not isinstance(value, JITFunction):
        inner = getattr(value, "jit_function", None)
        if inner is None:
            raise TypeError(f"{qualname} in {module_name} is not a tl_jit.jit function")
        value = inner
    return value


def _compile_config_in_worker(
    reference: tuple[str, str, str],
    arguments: dict[str, Any],
    export_dir: str,
) -> str:
    """Worker entry: compile one configuration and export it; returns the export path."""
    jit_function = _resolve_in_worker(reference)
    kernel = jit_function.compile((), arguments)
    return str(kernel.export(export_dir))


class AutoTuner:
    """What ``@autotune`` returns: call it with the non-tuned arguments to get the best kernel.

    The returned `JITKernel` has ``.config`` (the winning configuration) and
    ``.latency`` (its median time per call in ms: the median is robust to preemption by
    other processes); ``.results`` holds every configuration's outcome
    of the last tuning run.
    """

    def __init__(
        self,
        jit_function: JITFunction,
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
    ) -> None:
        from tl_jit.eager import EagerJITFunction

        if isinstance(jit_function, EagerJITFunction):
            raise NotImplementedError(
                f"autotune: tuning an eager-style kernel ({jit_function.func.__qualname__}) is "
                "not supported yet; compile its configurations with .par_compile([...]) and "
                "time them (examples/autotune_gemm_eager.py), or write it as a builder"
            )
        if not isinstance(jit_function, JITFunction):
            raise TypeError(
                f"autotune: expected a @tl_jit.jit function (stack @autotune above @jit), "
                f"got {jit_function!r}"
            )
        self.jit_function = jit_function
        self.configs = configs
        self.warmup = warmup
        self.rep = rep
        self.ref_prog = ref_prog
        self.supply_prog = supply_prog
        self.rtol = rtol
        self.atol = atol
        self.skip_check = skip_check
        self.max_workers = max_workers
        self.dims = dict(dims or {})
        self.cache_results = cache_results
        self.results: list[ConfigResult] = []
        self._best: dict[str, JITKernel] = {}
        self.__wrapped__ = jit_function.func
        self.__doc__ = jit_function.func.__doc__

    def _config_list(self, arguments: Mapping[str, Any]) -> list[dict[str, Any]]:
        configs = self.configs(**arguments) if callable(self.configs) else self.configs
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
        configured = os.environ.get(WORKERS_ENV)
        if configured and configured.isdigit() and int(configured) > 0:
            return min(int(configured), count)
        return max(1, min(os.cpu_count() or 1, count))

    def _result_key(
        self, arguments: Mapping[str, Any], configs: list[dict[str, Any]]
    ) -> str | None:
        from tl_jit.keys import Unkeyable, frontend_key

        try:
            return frontend_key(
                self.jit_function.func,  # type: ignore[arg-type]
                {"arguments": dict(arguments), "configs": configs},
                {
                    **self.jit_function._frontend_options({}),
                    "autotune": [self.rtol, self.atol, self.skip_check, sorted(self.dims.items())],
                },
            )
        except (Unkeyable, AttributeError):
            return None

    def __call__(self, *args: Any, **kwargs: Any) -> JITKernel:
        """Tune for these (non-tuned) arguments and return the fastest kernel.

        A call that passes any tuned argument itself (a name that appears in the
        configs) skips tuning and returns the kernel compiled for exactly those
        arguments, as TileLang does.

        Raises:
            AutotuneError: no configuration compiled, ran and passed the check (the
                message lists each failure).
            TypeError, ValueError: malformed configs or arguments.
        """
        arguments = dict(kwargs)
        if args:
            names = list(self.jit_function._signature.parameters)
            arguments.update(zip(names, args, strict=False))
        configs = self._config_list(arguments)
        tuned_names = {name for config in configs for name in config}
        if tuned_names & set(arguments):
            # As in TileLang: a call that already passes tuned arguments is not tuned;
            # it compiles what it asks for (the function's defaults fill the rest).
            return self.jit_function.compile((), arguments)
        memo = repr(sorted(arguments.items()))
        if memo in self._best:
            return self._best[memo]
        key = self._result_key(arguments, configs) if self.cache_results else None
        use_disk = key is not None and not env.cache_disabled()
        if use_disk:
            kernel = self._from_saved(key, arguments)  # type: ignore[arg-type]
            if kernel is not None:
                self._best[memo] = kernel
                return kernel
        kernel = self._tune(arguments, configs)
        if use_disk and kernel.config is not None:
            from tl_jit.cache import default_cache

            default_cache().write_record(
                "autotune",
                key,  # type: ignore[arg-type]
                {
                    "best_config": kernel.config,
                    "latency": kernel.latency,
                    "results": [
                        {"config": r.config, "latency": r.latency, "error": r.error}
                        for r in self.results
                    ],
                },
            )
        self._best[memo] = kernel
        return kernel

    def _from_saved(self, key: str, arguments: Mapping[str, Any]) -> JITKernel | None:
        from tl_jit.cache import default_cache

        record = default_cache().read_record("autotune", key)
        if record is None or not isinstance(record.get("best_config"), dict):
            return None
        config = record["best_config"]
        kernel = self.jit_function.compile((), {**arguments, **config})
        kernel.config = dict(config)
        latency = record.get("latency")
        kernel.latency = float(latency) if isinstance(latency, int | float) else None
        self.results = [
            ConfigResult(dict(r["config"]), r.get("latency"), r.get("error"))
            for r in record.get("results", [])
            if isinstance(r, dict) and isinstance(r.get("config"), dict)
        ]
        return kernel

    def _compile_all(
        self, arguments: Mapping[str, Any], configs: list[dict[str, Any]], scratch: Path
    ) -> list[JITKernel | BaseException]:
        workers = self._workers(len(configs))
        reference = _function_reference(self.jit_function)
        outcomes: list[JITKernel | BaseException] = []
        if workers <= 1 or reference is None:
            with _progress(len(configs), "compiling") as advance:
                for config in configs:
                    try:
                        outcomes.append(self.jit_function.compile((), {**arguments, **config}))
                    except Exception as exc:
                        outcomes.append(exc)
                    advance()
            return outcomes
        context = multiprocessing.get_context("spawn")
        slots: list[JITKernel | BaseException | None] = [None] * len(configs)
        with (
            concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool,
            _progress(len(configs), "compiling") as advance,
        ):
            futures = {
                pool.submit(
                    _compile_config_in_worker,
                    reference,
                    {**arguments, **config},
                    str(scratch / f"config-{index}"),
                ): index
                for index, config in enumerate(configs)
            }
            for future in concurrent.futures.as_completed(futures):
                index = futures[future]
                try:
                    slots[index] = JITKernel.from_artifact(future.result())
                except Exception as exc:
                    slots[index] = exc
                advance()
        outcomes = [s if s is not None else RuntimeError("no result") for s in slots]
        return outcomes

    def _tune(self, arguments: Mapping[str, Any], configs: list[dict[str, Any]]) -> JITKernel:
        scratch = Path(tempfile.mkdtemp(prefix="tl-autotune-"))
        try:
            compiled = self._compile_all(arguments, configs, scratch)
            results: list[ConfigResult] = []
            best: JITKernel | None = None
            inputs: list[Any] | None = None
            for config, outcome in zip(configs, compiled, strict=True):
                if isinstance(outcome, BaseException):
                    results.append(self._skip(config, "compile", outcome))
                    continue
                try:
                    profiler = outcome.get_profiler(dims=self.dims)
                    if inputs is None:
                        inputs = profiler.make_inputs()
                        if self.supply_prog is not None:
                            inputs = list(self.supply_prog(outcome.params))
                    if self.ref_prog is not None and not self.skip_check:
                        profiler.assert_allclose(
                            self.ref_prog, rtol=self.rtol, atol=self.atol, inputs=list(inputs)
                        )
                    latency = profiler.do_bench(
                        warmup=self.warmup, rep=self.rep, inputs=inputs, return_mode="median"
                    )
                    assert isinstance(latency, float)
                except Exception as exc:
                    results.append(self._skip(config, "check/benchmark", exc))
                    continue
                results.append(ConfigResult(config, latency))
                if best is None or best.latency is None or latency < best.latency:
                    outcome.config = config
                    outcome.latency = latency
                    best = outcome
            self.results = results
            if best is None:
                detail = "\n".join(f"  {r.config}: {r.error}" for r in results)
                raise AutotuneError(
                    f"autotune {self.jit_function.func.__qualname__}: every configuration "
                    f"failed:\n{detail}"
                )
            assert best.config is not None
            # Reload the winner from the cache (or keep a private copy) so it outlives scratch.
            winner = self._keep(best, arguments)
            return winner
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _keep(self, best: JITKernel, arguments: Mapping[str, Any]) -> JITKernel:
        assert best.config is not None
        if env.cache_disabled():
            keep = Path(tempfile.mkdtemp(prefix="tl-autotune-best-"))
            import atexit

            atexit.register(shutil.rmtree, keep, True)
            kernel = JITKernel.from_artifact(best.export(keep / "kernel"))
        else:
            kernel = self.jit_function.compile((), {**arguments, **best.config})
        kernel.config = best.config
        kernel.latency = best.latency
        return kernel

    def _skip(self, config: dict[str, Any], stage: str, exc: BaseException) -> ConfigResult:
        message = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc) else ''}"
        if os.environ.get("TL_AUTOTUNE_TRACEBACK"):
            message += "\n" + "".join(traceback.format_exception(exc))
        warnings.warn(
            f"autotune {self.jit_function.func.__qualname__}: config {config} skipped "
            f"({stage} failed): {message}",
            AutotuneWarning,
            stacklevel=4,
        )
        return ConfigResult(config, None, message)


@contextlib.contextmanager
def _progress(total: int, what: str) -> Iterator[Callable[[], None]]:
    """A progress bar on a terminal (rich), nothing otherwise; yields ``advance()``."""
    if not sys.stderr.isatty():
        yield lambda: None
        return
    from rich.progress import Progress

    with Progress(transient=True) as progress:
        task = progress.add_task(f"autotune: {what}", total=total)
        yield lambda: progress.advance(task)


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
) -> Callable[[JITFunction], AutoTuner]:
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
        supply_prog: makes the inputs from the kernel's params (default: random ones).
        max_workers: compile worker processes (default ``TL_AUTOTUNE_WORKERS`` or
            min(cores, configs)); 1 compiles in this process.
        dims: sizes of symbolic dims for the generated inputs.
        cache_results: keep the result on disk (JSON) and reuse it next time.

    A configuration that fails to compile, run or pass its check is reported as an
    `AutotuneWarning` and skipped. Worker processes are started with ``spawn`` and
    import the module defining the function (a script needs an ``if __name__ ==
    "__main__":`` guard, as with any multiprocessing program); a function defined
    inside another function is compiled in this process instead.
    """

    def decorate(jit_function: JITFunction) -> AutoTuner:
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
        )

    return decorate
