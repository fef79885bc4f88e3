"""The pipeline type backends build their `PassPipeline` from (defined in tl_passes).

There is one pipeline type, `tl_passes.Pipeline`; it satisfies the
`PassPipeline` Protocol. It is re-exported here under the names backends
use: `StagedPipeline` (the same class), `PipelineStage` (a stage from a
plain ``(mod, target) -> mod`` function) and `pipeline_from_passes`.
Setting ``TL_DUMP_IR`` to a directory dumps the IR after every stage of every
pipeline run into ``$TL_DUMP_IR/<pipeline name>/`` (see `tl_passes.pipeline`).
"""

from __future__ import annotations

from tl_passes.pipeline import (
    DUMP_IR_ENV,
    IRDumpError,
    Pipeline,
    PipelineStage,
    StageFunction,
    pipeline_from_passes,
)

#: The backend-facing name of `tl_passes.Pipeline` (one class, two names).
StagedPipeline = Pipeline

__all__ = [
    "DUMP_IR_ENV",
    "IRDumpError",
    "PipelineStage",
    "StageFunction",
    "StagedPipeline",
    "pipeline_from_passes",
]
