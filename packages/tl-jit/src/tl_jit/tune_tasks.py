"""What an autotuning worker runs, wherever it runs (a local process, a Ray worker), and
how its result comes back: a built artifact as bytes, verified and installed here.

A worker finds the jit function again by reference (module, file, qualified name), so
every worker needs the same code (on a cluster: the same packages, or Ray's
``runtime_env``). Everything crossing the process boundary is plain data (strings,
numbers, bytes): a task's arguments and results pickle with the standard library.
"""

from __future__ import annotations

import atexit
import dataclasses
import importlib
import importlib.util
import inspect
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from tl_jit import env
from tl_jit.autotune_inputs import input_params
from tl_jit.errors import AutotuneError
from tl_jit.kernel import JITKernel
from tl_jit.profiler_inputs import symbolic_dims

FunctionReference = tuple[str, str, str]
"""(module name, module file, qualified name): how a worker imports the jit function."""

MAX_ARTIFACT_BYTES = 1 << 30
"""The largest artifact a worker may ship back (1 GiB); a bigger one is refused."""

_resolving = threading.local()
_loaded_scripts: dict[str, Any] = {}


def in_worker() -> bool:
    """Whether this thread is importing a jit function for an autotuning task (a script
    that tunes at import time then compiles in place instead of starting workers)."""
    return bool(getattr(_resolving, "active", False))


def function_reference(jit_function: Any) -> FunctionReference | None:
    """How a worker process finds ``jit_function`` again, or None when it cannot (a
    function defined inside another function, or in an interactive ``__main__``)."""
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


def resolve_jit_function(reference: FunctionReference) -> Any:
    """The `JITFunction` or `EagerJITFunction` that ``reference`` names (imported here).

    Raises:
        ImportError: the module cannot be imported; TypeError: the name is not a jit
            function (nor an object wrapping one, such as an `AutoTuner`).
    """
    from tl_jit.decorator import JITFunction
    from tl_jit.eager import EagerJITFunction

    module_name, file, qualname = reference
    _resolving.active = True
    try:
        module = _import_module(module_name, file)
    finally:
        _resolving.active = False
    value: Any = module
    for part in qualname.split("."):
        value = getattr(value, part)
    while not isinstance(value, JITFunction | EagerJITFunction):
        inner = getattr(value, "jit_function", None)
        if inner is None:
            raise TypeError(f"{qualname} in {module_name} is not a tl_jit.jit function")
        value = inner
    return value


def _import_module(module_name: str, file: str) -> Any:
    if module_name not in ("__main__", "__mp_main__"):
        return importlib.import_module(module_name)
    for candidate in (sys.modules.get("__main__"), sys.modules.get("__mp_main__")):
        if candidate is not None and getattr(candidate, "__file__", None) == file:
            return candidate
    module = _loaded_scripts.get(file)
    if module is None:  # a script: loaded once per process, under a name that is not __main__
        spec = importlib.util.spec_from_file_location("__tl_autotune_main__", file)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {file}")
        module = importlib.util.module_from_spec(spec)
        sys.modules["__tl_autotune_main__"] = module
        spec.loader.exec_module(module)
        _loaded_scripts[file] = module
    return module


PASS_CONFIGS_KEY = "pass_configs"
"""The configuration key TileLang reserves for per-configuration pass configs (merged
over the ``@jit`` function's own), unless the function has a parameter of that name."""


def compile_jit_function(jit_function: Any, arguments: Mapping[str, Any]) -> JITKernel:
    """Compile one configuration: ``arguments`` are a builder's compile-time arguments, or
    an eager kernel's template arguments and ``T.const`` values (by name), and may hold
    `PASS_CONFIGS_KEY`.

    Raises:
        TypeError: the pass configs are not a mapping.
        NotImplementedError: pass configs in an eager kernel's configuration.
        whatever compiling raises.
    """
    from tl_jit.eager import EagerJITFunction

    arguments = dict(arguments)
    pass_configs = None
    if (
        PASS_CONFIGS_KEY in arguments
        and PASS_CONFIGS_KEY not in inspect.signature(jit_function.func).parameters
    ):
        pass_configs = arguments.pop(PASS_CONFIGS_KEY)
        if not isinstance(pass_configs, Mapping):
            raise TypeError(
                f"autotune config key {PASS_CONFIGS_KEY!r}: expected a dict of pass "
                f"configs, got {type(pass_configs).__name__}"
            )
    if isinstance(jit_function, EagerJITFunction):
        if pass_configs is not None:
            raise NotImplementedError(
                f"autotune config key {PASS_CONFIGS_KEY!r} on an eager kernel: per-"
                "configuration pass configs are supported for @jit builders only; give "
                "them to @jit(pass_configs=...) instead"
            )
        return jit_function.compile(**arguments)
    if pass_configs is None:
        kernel: JITKernel = jit_function.compile((), arguments)
        return kernel
    merged = {**(jit_function.options.get("pass_configs") or {}), **pass_configs}
    built: JITKernel = jit_function.compile((), arguments, pass_configs=merged)
    return built


@dataclass(frozen=True)
class ShippedArtifact:
    """A built artifact as data: every file's bytes by relative path, and the ir key its
    manifest records (None when the worker built without a key)."""

    files: dict[str, bytes]
    ir_key: str | None
    name: str

    @classmethod
    def pack(cls, directory: str | os.PathLike[str], ir_key: str | None) -> ShippedArtifact:
        """Read an artifact directory (regular files only; links are refused).

        Raises:
            AutotuneError: the directory holds a link or more than `MAX_ARTIFACT_BYTES`.
        """
        root = Path(directory)
        files: dict[str, bytes] = {}
        total = 0
        for folder, subdirs, names in os.walk(root):
            for name in [*names, *subdirs]:
                path = Path(folder) / name
                if path.is_symlink():
                    raise AutotuneError(f"artifact {root}: {path} is a link; cannot ship it")
            for name in names:
                path = Path(folder) / name
                data = path.read_bytes()
                total += len(data)
                if total > MAX_ARTIFACT_BYTES:
                    raise AutotuneError(
                        f"artifact {root}: more than {MAX_ARTIFACT_BYTES} bytes; cannot ship it"
                    )
                files[path.relative_to(root).as_posix()] = data
        return cls(files=files, ir_key=ir_key, name=root.name)

    def unpack(self, directory: Path) -> Path:
        """Write the files into the absent ``directory`` and verify them against the
        manifest (every file listed, every hash equal, nothing else present).

        Raises:
            AutotuneError: a path escapes the directory, or the files do not match the
                manifest (naming what differs).
        """
        import tl_runtime

        directory.mkdir(parents=True)
        for relative, data in self.files.items():
            pure = PurePosixPath(relative)
            if pure.is_absolute() or ".." in pure.parts or not pure.parts:
                raise AutotuneError(f"shipped artifact: file path {relative!r} leaves the artifact")
            target = directory.joinpath(*pure.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "xb") as handle:
                handle.write(data)
        try:
            manifest = tl_runtime.read_manifest(directory, verify=True)
        except (tl_runtime.ArtifactError, tl_runtime.SchemaVersionError) as exc:
            raise AutotuneError(
                f"shipped artifact {self.name!r} failed verification: {exc}"
            ) from None
        listed = {entry.path for entry in manifest.files} | {tl_runtime.MANIFEST_NAME}
        unlisted = sorted(set(self.files) - listed)
        if unlisted:
            raise AutotuneError(
                f"shipped artifact {self.name!r}: files not in its manifest: {unlisted}"
            )
        from tl_jit.cache import ENTRY_KEY_FIELD

        recorded = manifest.versions.get(ENTRY_KEY_FIELD)
        if self.ir_key is not None and recorded != self.ir_key:
            raise AutotuneError(
                f"shipped artifact {self.name!r}: its manifest records {ENTRY_KEY_FIELD}="
                f"{recorded!r}, expected {self.ir_key}"
            )
        return directory


def compile_config_task(reference: FunctionReference, arguments: dict[str, Any]) -> ShippedArtifact:
    """Worker entry: compile one configuration and return its artifact as bytes."""
    jit_function = resolve_jit_function(reference)
    kernel = compile_jit_function(jit_function, arguments)
    return ShippedArtifact.pack(kernel.artifact_dir, kernel.cache_key)


def install_artifact(shipped: ShippedArtifact) -> JITKernel:
    """Verify a shipped artifact and make it a kernel of this process: installed in the
    local disk cache under its ir key (an entry already there is kept), or, with the
    cache disabled or no key, in a private directory removed at exit.

    Raises:
        AutotuneError: the artifact fails verification (see `ShippedArtifact.unpack`).
    """
    import tl_runtime

    staging_root = Path(tempfile.mkdtemp(prefix="tl-shipped-"))
    try:
        staged = shipped.unpack(staging_root / "artifact")
        if shipped.ir_key is not None and not env.cache_disabled():
            from tl_jit.cache import default_cache

            cache = default_cache()
            cache.get_or_build(shipped.ir_key, lambda d: shutil.copytree(staged, d))
            runtime_kernel = cache.load(shipped.ir_key)
            if runtime_kernel is None:
                raise AutotuneError(
                    f"shipped artifact {shipped.name!r}: installed under {shipped.ir_key[:16]}... "
                    "but the cache discarded it"
                )
            return JITKernel(runtime_kernel, cache_key=shipped.ir_key)
        keep = Path(tempfile.mkdtemp(prefix="tl-autotune-kernel-"))
        atexit.register(shutil.rmtree, keep, True)
        shutil.copytree(staged, keep / "artifact")
        return JITKernel(tl_runtime.load(keep / "artifact"), cache_key=shipped.ir_key)
    finally:
        shutil.rmtree(staging_root, ignore_errors=True)


@dataclass(frozen=True)
class TimingRequest:
    """How to check and time one kernel (what a timing task needs besides the kernel)."""

    warmup: float
    rep: float
    dims: dict[str, int]
    ref_prog: Callable[..., Any] | None
    supply_prog: Callable[[Sequence[Any]], Sequence[Any]] | None
    rtol: float
    atol: float
    skip_check: bool
    rounds: int = 1
    timer: Callable[[Any], float] | None = None
    """A `tl_jit.tune_timing.Timer`; None: `tl_jit.tune_timing.default_timer`."""
    call_shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    """The shapes of the tuned call's arrays by parameter name: they give the sizes of
    a built kernel's symbolic dims that ``dims`` does not name."""
    max_mismatched_ratio: float = 0.0
    """The share of each output's elements that may differ beyond the tolerances."""
    manual_check_prog: Callable[[list[Any], list[Any]], Any] | None = None
    """Replaces the tolerance check: called with the kernel's outputs and the
    reference's (lists), it raises to fail the configuration."""
    supply_type: Any = None
    """The `tl_jit.TensorSupplyType` of generated inputs (None: the profiler's own)."""
    early_stop_factor: float | None = None
    """``autotune(early_stop=True)``: the first pass gives each configuration the
    baseline ``early_stop_factor`` x the fastest time so far (None: off)."""
    early_stop_baseline: float | None = None
    """A configuration whose first estimate (the timer on a window of no warmup and at
    most `EARLY_STOP_ESTIMATE_MS` of timed calls) is slower than this many ms keeps
    that estimate as its time instead of being timed in full."""

    def dims_for(self, kernel: JITKernel) -> dict[str, int]:
        """The sizes of ``kernel``'s symbolic dims: read from the call's arrays at the
        parameters that declare them (whatever way the kernel wrote its annotations),
        with ``dims`` winning (those of ``dims`` the kernel has: one configuration's
        kernel may fix a dim another keeps symbolic)."""
        sizes: dict[str, int] = {}
        symbolic = symbolic_dims(kernel)
        for param in kernel.params:
            shape = self.call_shapes.get(param.name)
            if shape is None or param.kind == "scalar" or len(shape) != len(param.shape):
                continue
            for dim, size in zip(param.shape, shape, strict=True):
                if isinstance(dim, str):
                    sizes.setdefault(dim, size)
        return {**sizes, **{name: size for name, size in self.dims.items() if name in symbolic}}

    def inputs_for(self, kernel: JITKernel, profiler: Any) -> list[Any]:
        """The inputs to check and time ``kernel`` on: ``supply_prog``'s (given the
        parameters a call takes; they need no sizes for symbolic dims), else
        ``profiler``'s `tl_jit.profiler.Profiler.make_inputs`."""
        if self.supply_prog is not None:
            return list(self.supply_prog(input_params(kernel)))
        return list(profiler.make_inputs())

    def first_pass(self, timings: Mapping[int, Sequence[float]]) -> TimingRequest:
        """The request of the next configuration's first timing, given the ``timings``
        so far: with early stop on, its baseline is the factor times the fastest."""
        if self.early_stop_factor is None or not timings:
            return dataclasses.replace(self, rounds=1)
        fastest = min(min(samples) for samples in timings.values() if samples)
        return dataclasses.replace(
            self, rounds=1, early_stop_baseline=fastest * self.early_stop_factor
        )


EARLY_STOP_ESTIMATE_MS = 1.0
"""The timed window of an early-stop estimate (the timer makes at least its fewest
calls, `tl_jit.timing.MIN_SAMPLES` for the default one)."""


def check_and_time(
    kernel: JITKernel,
    request: TimingRequest,
    inputs: list[Any] | None,
    config: Mapping[str, Any],
) -> tuple[list[float], list[Any]]:
    """Check ``kernel`` (built from ``config``) against the reference (unless told not
    to) and time it ``request.rounds`` times with the request's timer; returns the
    per-round latencies (ms) and the inputs used (made from the kernel's params when
    ``inputs`` is None).

    The check is `tl_jit.profiler.Profiler.assert_allclose`: ``request.ref_prog`` gets
    the inputs and returns the values of the parameters the kernel writes (its
    ``out_idx`` outputs, then the parameters it writes in place, in parameter order), so
    a kernel without ``out_idx`` is checked on the arrays it writes.

    Raises:
        AssertionError: the output differs from the reference; whatever the kernel or
            the timer raises; ValueError: the timer gave no positive number, the kernel
            writes no parameter to check, or the inputs to make are too large (see
            `tl_jit.profiler.Profiler.make_inputs`).
    """
    from tl_jit.tune_timing import Measurement, default_timer

    profiler = kernel.get_profiler(
        dims=request.dims_for(kernel), tensor_supply_type=request.supply_type
    )
    if inputs is None:
        inputs = request.inputs_for(kernel, profiler)
    if request.ref_prog is not None and not request.skip_check:
        if request.manual_check_prog is not None:
            profiler.manual_assert_close(
                request.ref_prog, inputs=list(inputs), manual_check_prog=request.manual_check_prog
            )
        else:
            profiler.assert_allclose(
                request.ref_prog,
                rtol=request.rtol,
                atol=request.atol,
                inputs=list(inputs),
                max_mismatched_ratio=request.max_mismatched_ratio,
            )
    timer = request.timer or default_timer
    measurement = Measurement(
        kernel=kernel,
        profiler=profiler,
        inputs=inputs,
        config=dict(config),
        warmup=request.warmup,
        rep=request.rep,
    )
    if request.early_stop_baseline is not None:
        estimate = _timed(
            timer,
            dataclasses.replace(
                measurement, warmup=0.0, rep=min(request.rep, EARLY_STOP_ESTIMATE_MS)
            ),
        )
        if estimate > request.early_stop_baseline:
            return [estimate], inputs
    return [_timed(timer, measurement) for _ in range(max(1, request.rounds))], inputs


def _timed(timer: Callable[[Any], float], measurement: Any) -> float:
    latency = timer(measurement)
    if isinstance(latency, bool) or not isinstance(latency, int | float) or not latency > 0:
        raise ValueError(f"autotune timer: expected a time in ms > 0, got {latency!r}")
    return float(latency)


_TIMING_SCRATCH = "tl-timing-"
"""Prefix of a timing worker's scratch folder, followed by the worker's pid."""


def _remove_dead_workers_scratch() -> None:
    """Remove the scratch folders of timing workers that are gone.

    A worker killed inside a task (a kernel that crashed it, or ran past the search's
    time limit) never reaches its own clean-up; the next timing task on this machine
    removes what it left. Only folders named `_TIMING_SCRATCH` + pid + ``-`` whose pid
    is no running process are touched.
    """
    root = Path(tempfile.gettempdir())
    try:
        leftovers = list(root.glob(f"{_TIMING_SCRATCH}*-*"))
    except OSError:
        return
    for folder in leftovers:
        pid_text = folder.name[len(_TIMING_SCRATCH) :].split("-", 1)[0]
        if not pid_text.isdigit() or int(pid_text) == os.getpid():
            continue
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except (OSError, OverflowError):
            continue  # alive under another user, or not a pid: leave it


def time_artifact_task(
    shipped: ShippedArtifact, request: TimingRequest, config: Mapping[str, Any]
) -> list[float]:
    """Worker entry on a timing worker (a device-owning worker, or a local worker process
    that isolates the calling process from a kernel crashing when run): load the shipped
    artifact (verified), check and time it; returns the per-round latencies in ms."""
    import tl_runtime

    _remove_dead_workers_scratch()
    scratch = Path(tempfile.mkdtemp(prefix=f"{_TIMING_SCRATCH}{os.getpid()}-"))
    try:
        kernel = JITKernel(tl_runtime.load(shipped.unpack(scratch / "artifact")))
        samples, _ = check_and_time(kernel, request, None, config)
        return samples
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
