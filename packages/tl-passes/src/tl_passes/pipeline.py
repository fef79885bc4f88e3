"""`Pipeline`: an ordered, frozen tuple of passes with callbacks, timing and IR dumps."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import tvm

from tl_passes.pass_base import Pass, PassContext

#: Environment variable naming a directory that receives the IR after every pass.
DUMP_IR_ENV = "TL_DUMP_IR"

#: Called after each pass with (index from 1, the pass, the module it produced, seconds).
PassCallback = Callable[[int, Pass, tvm.IRModule, float], None]


@dataclass(frozen=True)
class PassTiming:
    """How long one pass of a pipeline run took."""

    index: int
    name: str
    seconds: float


@dataclass(frozen=True)
class PipelineRun:
    """The result of `Pipeline.run_with_timings`: the module and per-pass timings."""

    module: tvm.IRModule
    timings: tuple[PassTiming, ...]

    @property
    def total_seconds(self) -> float:
        """The sum of every pass's time."""
        return sum(t.seconds for t in self.timings)


def module_text(mod: tvm.IRModule) -> str:
    """Return the TVMScript text of ``mod`` (what IR dumps contain)."""
    return str(mod.script())


@dataclass(frozen=True)
class Pipeline:
    """An ordered sequence of passes.

    Args:
        passes: the passes, in order (any iterable; stored as a tuple).
        dump_dir: a directory that receives ``00-input.tir`` and, after the
            pass at position ``NN`` (from 01), ``NN-<pass-name>.tir``. When
            ``None``, the ``TL_DUMP_IR`` environment variable is consulted at
            run time; when neither is set nothing is written.
        callbacks: functions called after every pass with
            ``(index, pass, module, seconds)``.

    Raises:
        TypeError: if an element of ``passes`` is not a `Pass` or a callback
            is not callable.
    """

    passes: tuple[Pass, ...]
    dump_dir: str | os.PathLike[str] | None = None
    callbacks: tuple[PassCallback, ...] = field(default=())

    def __post_init__(self) -> None:
        passes = tuple(self.passes)
        for position, item in enumerate(passes):
            if not isinstance(item, Pass):
                raise TypeError(
                    f"Pipeline passes[{position}]: expected a tl_passes.Pass instance, "
                    f"got {type(item).__name__} ({item!r})"
                )
        callbacks = tuple(self.callbacks)
        for position, callback in enumerate(callbacks):
            if not callable(callback):
                raise TypeError(
                    f"Pipeline callbacks[{position}]: expected a callable, "
                    f"got {type(callback).__name__}"
                )
        object.__setattr__(self, "passes", passes)
        object.__setattr__(self, "callbacks", callbacks)

    @property
    def names(self) -> tuple[str, ...]:
        """The pass names, in order."""
        return tuple(p.name for p in self.passes)

    def with_callbacks(self, *callbacks: PassCallback) -> Pipeline:
        """Return a copy of this pipeline with ``callbacks`` appended."""
        return Pipeline(self.passes, self.dump_dir, self.callbacks + tuple(callbacks))

    def run(self, mod: tvm.IRModule, ctx: PassContext | None = None) -> tvm.IRModule:
        """Run every pass in order and return the final module.

        Args:
            mod: the input module.
            ctx: the context handed to every pass (an empty one when ``None``).

        Returns:
            The module produced by the last pass.

        Raises:
            TypeError: if ``mod`` is not an IRModule or a pass returns one that is not.
            Whatever a pass raises, unchanged.
        """
        return self.run_with_timings(mod, ctx).module

    def run_with_timings(self, mod: tvm.IRModule, ctx: PassContext | None = None) -> PipelineRun:
        """Like `run`, but also return each pass's wall-clock time."""
        if not isinstance(mod, tvm.IRModule):
            raise TypeError(f"Pipeline.run mod: expected a tvm.IRModule, got {type(mod).__name__}")
        context = ctx if ctx is not None else PassContext()
        dump_dir = self._resolve_dump_dir()
        if dump_dir is not None:
            dump_dir.mkdir(parents=True, exist_ok=True)
            (dump_dir / "00-input.tir").write_text(module_text(mod))
        timings: list[PassTiming] = []
        for index, pass_ in enumerate(self.passes, start=1):
            start = time.perf_counter()
            result = pass_.run(mod, context)
            seconds = time.perf_counter() - start
            if not isinstance(result, tvm.IRModule):
                raise TypeError(
                    f"pass {pass_.name!r} returned {type(result).__name__}, expected a tvm.IRModule"
                )
            mod = result
            timings.append(PassTiming(index, pass_.name, seconds))
            if dump_dir is not None:
                (dump_dir / f"{index:02d}-{pass_.name}.tir").write_text(module_text(mod))
            for callback in self.callbacks:
                callback(index, pass_, mod, seconds)
        return PipelineRun(mod, tuple(timings))

    def _resolve_dump_dir(self) -> Path | None:
        if self.dump_dir is not None:
            return Path(self.dump_dir)
        from_env = os.environ.get(DUMP_IR_ENV)
        return Path(from_env) if from_env else None
