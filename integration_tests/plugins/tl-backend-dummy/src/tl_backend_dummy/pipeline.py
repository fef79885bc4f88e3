"""The dummy backend's pipeline: two real TVM passes, in order."""

from __future__ import annotations

import tvm
from tvm import IRModule
from tvm.target import Target

from tl_backend_api import Pipeline, PipelineStage


def bind_target(mod: IRModule, target: Target) -> IRModule:
    """Attach ``target`` to every function (TVM's BindTarget)."""
    return tvm.tirx.transform.BindTarget(target)(mod)


def simplify(mod: IRModule, target: Target) -> IRModule:
    """Simplify statements and expressions (TVM's StmtSimplify)."""
    return tvm.tirx.transform.StmtSimplify()(mod)


PIPELINE = Pipeline(
    name="dummy-ext-dev",
    stages=(
        PipelineStage("bind-target", bind_target),
        PipelineStage("simplify", simplify),
    ),
)
