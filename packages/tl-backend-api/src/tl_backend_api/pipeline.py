"""`StagedPipeline`: the ready-made `PassPipeline` backends compose from named stages.

Setting the environment variable ``TL_DUMP_IR`` to a directory dumps the IR
after every stage of every pipeline run (one subdirectory per pipeline).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
from tvm import IRModule
from tvm.target import Target

from tl_backend_api.errors import BackendValidationError
from tl_backend_api.protocols import is_kebab_case
from tl_passes import Pass, PassContext

#: Environment variable naming a directory that receives IR dumps.
DUMP_IR_ENV = "TL_DUMP_IR"

StageFunction = Callable[[IRModule, Target], IRModule]


def _check_stage_name(_instance: object, _attribute: object, value: str) -> None:
    if not isinstance(value, str) or not is_kebab_case(value):
        raise BackendValidationError(
            f"PipelineStage.name: expected a kebab-case name such as 'lower-tile-copy', got {value!r}"
        )


def _check_callable(_instance: object, _attribute: object, value: StageFunction) -> None:
    if not callable(value):
        raise BackendValidationError(
            "PipelineStage.apply: expected a callable (mod, target) -> mod, "
            f"got {type(value).__name__}"
        )


@attrs.frozen
class PipelineStage:
    """One named step of a pipeline: ``apply(mod, target) -> mod``."""

    name: str = attrs.field(validator=_check_stage_name)
    apply: StageFunction = attrs.field(validator=_check_callable)


def _stages(value: Sequence[PipelineStage]) -> tuple[PipelineStage, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise BackendValidationError(
            f"StagedPipeline.stages: expected a sequence of PipelineStage, got {type(value).__name__}"
        )
    return tuple(value)


@attrs.frozen
class StagedPipeline:
    """A `PassPipeline` made of an explicit, ordered tuple of `PipelineStage`.

    Construction checks: a kebab-case name, at least one stage, every item
    a `PipelineStage`, unique stage names.
    """

    name: str
    stages: tuple[PipelineStage, ...] = attrs.field(converter=_stages)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.name, str) or not is_kebab_case(self.name):
            raise BackendValidationError(
                f"StagedPipeline.name: expected a kebab-case name, got {self.name!r}"
            )
        if not self.stages:
            raise BackendValidationError(
                f"StagedPipeline {self.name!r}: expected at least one stage, got none"
            )
        seen: set[str] = set()
        for stage in self.stages:
            if not isinstance(stage, PipelineStage):
                raise BackendValidationError(
                    f"StagedPipeline {self.name!r}: expected PipelineStage items, "
                    f"got {type(stage).__name__}"
                )
            if stage.name in seen:
                raise BackendValidationError(
                    f"StagedPipeline {self.name!r}: stage name {stage.name!r} appears twice"
                )
            seen.add(stage.name)

    @property
    def stage_names(self) -> tuple[str, ...]:
        """The stages' names, in the order they run."""
        return tuple(stage.name for stage in self.stages)

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
        mod: IRModule,
        target: Target,
        *,
        dump_dir: Path | None = None,
        start: str | None = None,
        stop: str | None = None,
    ) -> IRModule:
        """Apply the stages from ``start`` to ``stop`` (inclusive) in order.

        Args:
            mod: the module to lower.
            target: the normalized target, passed to every stage.
            dump_dir: directory receiving ``NN-<stage>.tir`` after each stage;
                defaults to ``$TL_DUMP_IR/<pipeline name>`` when that variable is set.
            start, stop: stage names bounding the run.

        Raises:
            ValueError: an unknown stage name, or ``stop`` before ``start``.
            TypeError: a stage returned something other than an IRModule.
        """
        first = self._index("start", start, 0)
        last = self._index("stop", stop, len(self.stages) - 1)
        if last < first:
            raise ValueError(
                f"stop: expected a stage at or after {self.stage_names[first]!r}, got {stop!r}"
            )
        if dump_dir is None and os.environ.get(DUMP_IR_ENV):
            dump_dir = Path(os.environ[DUMP_IR_ENV]) / self.name
        if dump_dir is not None:
            dump_dir.mkdir(parents=True, exist_ok=True)
        for index in range(first, last + 1):
            stage = self.stages[index]
            result = stage.apply(mod, target)
            if not isinstance(result, IRModule):
                raise TypeError(
                    f"stage {stage.name!r} of pipeline {self.name!r}: expected it to return "
                    f"an IRModule, got {type(result).__name__}"
                )
            mod = result
            if dump_dir is not None:
                (dump_dir / f"{index:02d}-{stage.name}.tir").write_text(mod.script())
        return mod


@attrs.frozen
class _RunPass:
    """A stage function that runs one tl_passes `Pass` with the target in its context."""

    pass_: Pass
    options: Mapping[str, Any]

    def __call__(self, mod: IRModule, target: Target) -> IRModule:
        return self.pass_.run(mod, PassContext(target=target, options=self.options))


def pipeline_from_passes(
    name: str, passes: Sequence[Pass], *, options: Mapping[str, Any] | None = None
) -> StagedPipeline:
    """Build a `StagedPipeline` with one stage per tl_passes `Pass`, named after it.

    Args:
        name: the pipeline's kebab-case name.
        passes: the passes, in the order they run.
        options: pass configuration handed to every pass in its `PassContext`.

    Raises:
        BackendValidationError: an item is not a tl_passes `Pass`, or the
            stage names are not unique/kebab-case (as `StagedPipeline`).
    """
    stages = []
    for item in passes:
        if not isinstance(item, Pass):
            raise BackendValidationError(
                f"pipeline_from_passes({name!r}): expected tl_passes.Pass items, "
                f"got {type(item).__name__}"
            )
        stages.append(PipelineStage(item.name, _RunPass(item, dict(options or {}))))
    return StagedPipeline(name=name, stages=tuple(stages))
