"""`Pipeline`: the one pipeline type: a named, ordered tuple of uniquely named passes.

Every backend's lowering is a `Pipeline`; its stages are `Pass` objects (a
`PipelineStage` turns a plain ``(mod, target) -> mod`` function into one).
A run can start and stop at any stage, reports per-stage timings, calls
callbacks, and dumps the IR after every stage.

IR dumps follow one rule: with ``dump_dir=`` the files go into that directory;
otherwise, when the environment variable ``TL_DUMP_IR`` is set, into
``$TL_DUMP_IR/<pipeline name>/``. The files are ``00-input.tir`` (the module
the run started from) and ``NN-<stage name>.tir`` after the stage at position
``NN`` (counted from 01 over the whole pipeline, also when ``start`` skips some).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import tvm

from tl_passes.pass_base import Pass, PassContext, is_kebab_case

#: Environment variable naming a directory that receives the IR after every stage.
DUMP_IR_ENV = "TL_DUMP_IR"

#: Called after each stage with (position from 1, the pass, the module it produced, seconds).
PassCallback = Callable[[int, Pass, tvm.IRModule, float], None]

#: A plain stage function: ``apply(mod, target) -> mod``.
StageFunction = Callable[[tvm.IRModule, Any], tvm.IRModule]


class IRDumpError(OSError):
    """The IR dump directory (``dump_dir=`` or ``TL_DUMP_IR``) cannot be created or written."""


class PipelineStage(Pass):
    """A stage made from a plain function ``apply(mod, target) -> mod``.

    Args:
        name: the stage's kebab-case name (names its IR dump).
        apply: called with the module and the run's target (``None`` when the
            run has none).

    Raises:
        ValueError: ``name`` is not a kebab-case string.
        TypeError: ``apply`` is not callable.
    """

    apply: StageFunction

    def __init__(self, name: str, apply: StageFunction) -> None:
        if not isinstance(name, str) or not is_kebab_case(name):
            raise ValueError(
                f"PipelineStage.name: expected a kebab-case name such as 'lower-tile-copy', "
                f"got {name!r}"
            )
        if not callable(apply):
            raise TypeError(
                "PipelineStage.apply: expected a callable (mod, target) -> mod, "
                f"got {type(apply).__name__}"
            )
        # `name` is a class attribute on ordinary passes; a stage names itself per instance.
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "apply", apply)

    def __setattr__(self, attribute: str, value: object) -> None:
        raise AttributeError(f"PipelineStage is immutable (tried to set {attribute!r})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PipelineStage):
            return NotImplemented
        return (self.name, self.apply) == (other.name, other.apply)

    def __hash__(self) -> int:
        return hash((self.name, self.apply))

    def __repr__(self) -> str:
        return f"PipelineStage({self.name!r}, {self.apply!r})"

    def run(self, mod: tvm.IRModule, ctx: PassContext) -> tvm.IRModule:
        """Return ``apply(mod, ctx.target)``."""
        result: tvm.IRModule = self.apply(mod, ctx.target)
        return result


@dataclass(frozen=True)
class PassTiming:
    """How long one stage of a pipeline run took."""

    index: int
    name: str
    seconds: float


@dataclass(frozen=True)
class PipelineRun:
    """The result of `Pipeline.run_with_timings`: the module and per-stage timings."""

    module: tvm.IRModule
    timings: tuple[PassTiming, ...]

    @property
    def total_seconds(self) -> float:
        """The sum of every stage's time."""
        return sum(t.seconds for t in self.timings)


def module_text(mod: tvm.IRModule) -> str:
    """Return the TVMScript text of ``mod`` (what IR dumps contain)."""
    return str(mod.script())


def dump_directory(pipeline_name: str, dump_dir: str | os.PathLike[str] | None) -> Path | None:
    """Where a run of pipeline ``pipeline_name`` writes its IR dumps (``None``: nowhere).

    ``dump_dir`` when given, else ``$TL_DUMP_IR/<pipeline_name>`` when that
    variable is set and not empty. Creates nothing.
    """
    if dump_dir is not None:
        return Path(dump_dir)
    from_env = os.environ.get(DUMP_IR_ENV)
    return Path(from_env) / pipeline_name if from_env else None


class _IRDumper:
    """Writes the dump files of one run, turning OS errors into `IRDumpError`."""

    def __init__(self, directory: Path, explicit: bool) -> None:
        self.directory = directory
        self.source = "dump_dir" if explicit else f"{DUMP_IR_ENV}={os.environ.get(DUMP_IR_ENV)!r}"
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise self._error("cannot create the IR dump directory", directory, error) from None
        if not directory.is_dir():
            raise IRDumpError(
                f"{self.source}: expected a directory for IR dumps, but {directory} is not one"
            )

    def _error(self, what: str, path: Path, error: OSError) -> IRDumpError:
        reason = error.strerror or type(error).__name__
        return IRDumpError(f"{self.source}: {what} {path}: {reason}")

    def write(self, file_name: str, mod: tvm.IRModule) -> None:
        path = self.directory / file_name
        try:
            path.write_text(module_text(mod))
        except OSError as error:
            raise self._error("cannot write the IR dump", path, error) from None


def _check_stages(value: object) -> tuple[Pass, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(
            f"Pipeline.stages: expected a sequence of tl_passes.Pass, got {type(value).__name__}"
        )
    return tuple(value)


@dataclass(frozen=True)
class Pipeline:
    """A named, ordered sequence of passes: a backend's lowering.

    Args:
        name: the pipeline's kebab-case name (the ``TL_DUMP_IR`` subdirectory).
        stages: the passes, in order (a sequence; stored as a tuple); at
            least one, with unique names.
        options: pass configuration handed to every pass in its `PassContext`
            (copied, read-only).
        callbacks: functions called after every stage with
            ``(position, pass, module, seconds)``.

    Raises:
        ValueError: a name that is not kebab-case, no stages, or a stage name
            that appears twice.
        TypeError: a stage that is not a `Pass`, or a callback that is not callable.
    """

    name: str
    stages: tuple[Pass, ...]
    options: Mapping[str, Any] = field(default_factory=dict)
    callbacks: tuple[PassCallback, ...] = field(default=())

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not is_kebab_case(self.name):
            raise ValueError(
                f"Pipeline.name: expected a kebab-case name such as 'cpu-c', got {self.name!r}"
            )
        stages = _check_stages(self.stages)
        if not stages:
            raise ValueError(f"Pipeline {self.name!r}: expected at least one stage, got none")
        seen: set[str] = set()
        for position, item in enumerate(stages):
            if not isinstance(item, Pass):
                raise TypeError(
                    f"Pipeline {self.name!r} stages[{position}]: expected a tl_passes.Pass "
                    f"instance, got {type(item).__name__} ({item!r})"
                )
            if item.name in seen:
                raise ValueError(f"Pipeline {self.name!r}: stage name {item.name!r} appears twice")
            seen.add(item.name)
        callbacks = tuple(self.callbacks)
        for position, callback in enumerate(callbacks):
            if not callable(callback):
                raise TypeError(
                    f"Pipeline {self.name!r} callbacks[{position}]: expected a callable, "
                    f"got {type(callback).__name__}"
                )
        object.__setattr__(self, "stages", stages)
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))
        object.__setattr__(self, "callbacks", callbacks)

    def __hash__(self) -> int:
        # `options` is a read-only mapping (unhashable); equal pipelines share name and stages.
        return hash((self.name, self.stages))

    @property
    def stage_names(self) -> tuple[str, ...]:
        """The stages' names, in the order they run."""
        return tuple(stage.name for stage in self.stages)

    def with_callbacks(self, *callbacks: PassCallback) -> Pipeline:
        """Return a copy of this pipeline with ``callbacks`` appended."""
        return Pipeline(self.name, self.stages, self.options, self.callbacks + tuple(callbacks))

    def _index(self, which: str, name: str | None, default: int) -> int:
        if name is None:
            return default
        try:
            return self.stage_names.index(name)
        except ValueError:
            raise ValueError(
                f"{which}: expected one of the stages {list(self.stage_names)} of "
                f"pipeline {self.name!r}, got {name!r}"
            ) from None

    def run(
        self,
        mod: tvm.IRModule,
        target: tvm.target.Target | None = None,
        *,
        dump_dir: str | os.PathLike[str] | None = None,
        start: str | None = None,
        stop: str | None = None,
    ) -> tvm.IRModule:
        """Apply the stages from ``start`` to ``stop`` (inclusive) in order.

        Args:
            mod: the module to lower (not modified).
            target: the target, handed to every pass in its `PassContext`
                (``None`` for a target-neutral run).
            dump_dir: where the IR after each stage goes (see the module
                docstring); default ``$TL_DUMP_IR/<name>`` when set.
            start, stop: stage names bounding the run; default the first and last.

        Returns:
            The module produced by the last stage run.

        Raises:
            TypeError: ``mod`` is not an IRModule, or a stage returned something else.
            ValueError: ``start``/``stop`` name no stage, or ``stop`` precedes ``start``.
            IRDumpError: the dump directory cannot be created or written (names
                ``TL_DUMP_IR`` or ``dump_dir`` and the path).
            Whatever a pass raises, unchanged.
        """
        return self.run_with_timings(mod, target, dump_dir=dump_dir, start=start, stop=stop).module

    def run_with_timings(
        self,
        mod: tvm.IRModule,
        target: tvm.target.Target | None = None,
        *,
        dump_dir: str | os.PathLike[str] | None = None,
        start: str | None = None,
        stop: str | None = None,
    ) -> PipelineRun:
        """Like `run`, but also return each stage's wall-clock time."""
        if not isinstance(mod, tvm.IRModule):
            raise TypeError(
                f"Pipeline {self.name!r} run mod: expected a tvm.IRModule, got {type(mod).__name__}"
            )
        first = self._index("start", start, 0)
        last = self._index("stop", stop, len(self.stages) - 1)
        if last < first:
            raise ValueError(
                f"stop: expected a stage at or after {self.stage_names[first]!r}, got {stop!r}"
            )
        context = PassContext(target=target, options=self.options)
        directory = dump_directory(self.name, dump_dir)
        dumper = _IRDumper(directory, dump_dir is not None) if directory is not None else None
        if dumper is not None:
            dumper.write("00-input.tir", mod)
        timings: list[PassTiming] = []
        for index in range(first, last + 1):
            stage = self.stages[index]
            position = index + 1
            began = time.perf_counter()
            result = stage.run(mod, context)
            seconds = time.perf_counter() - began
            if not isinstance(result, tvm.IRModule):
                raise TypeError(
                    f"stage {stage.name!r} of pipeline {self.name!r}: expected it to return "
                    f"an IRModule, got {type(result).__name__}"
                )
            mod = result
            timings.append(PassTiming(position, stage.name, seconds))
            if dumper is not None:
                dumper.write(f"{position:02d}-{stage.name}.tir", mod)
            for callback in self.callbacks:
                callback(position, stage, mod, seconds)
        return PipelineRun(mod, tuple(timings))


def pipeline_from_passes(
    name: str, passes: Sequence[Pass], *, options: Mapping[str, Any] | None = None
) -> Pipeline:
    """Build a `Pipeline` named ``name`` with one stage per pass, named after it.

    Args:
        name: the pipeline's kebab-case name.
        passes: the passes, in the order they run.
        options: pass configuration handed to every pass in its `PassContext`.

    Raises:
        TypeError, ValueError: as `Pipeline`.
    """
    return Pipeline(name, _check_stages(passes), options=dict(options or {}))
