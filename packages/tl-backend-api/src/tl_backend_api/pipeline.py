"""The pipeline type backends build their `PassPipeline` from (defined in tl_passes).

There is one pipeline type, `tl_passes.Pipeline`; it satisfies the
`PassPipeline` Protocol. It is re-exported here under its own name, with
`PipelineStage` (a stage from a plain ``(mod, target) -> mod`` function) and
`pipeline_from_passes`, so a backend package imports its contract from
tl_backend_api alone. Setting ``TL_DUMP_IR`` to a directory dumps the IR after
every stage of every pipeline run into ``$TL_DUMP_IR/<pipeline name>/`` (see
`tl_passes.pipeline`).
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

__all__ = [
    "DUMP_IR_ENV",
    "IRDumpError",
    "Pipeline",
    "PipelineStage",
    "StageFunction",
    "pipeline_from_passes",
]
