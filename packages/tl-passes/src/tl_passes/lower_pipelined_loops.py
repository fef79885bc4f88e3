"""`lower-pipelined-loops`: run ``T.Pipelined`` loops in order (target-neutral).

A ``T.Pipelined(n, num_stages=s)`` loop is a serial loop annotated
``{"tl.loop_kind": "pipelined", "num_stages": s}``. On targets without
asynchronous copies (the CPU) its stages run in program order, which is what
this pass produces: the annotations go and the loop stays serial. A GPU
pipeline that overlaps the stages replaces this pass with its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import tvm_ffi
from tvm import tirx

from tl_ir.launch import LOOP_KIND_KEY
from tl_passes.pass_base import PassContext, PrimFuncPass

#: The loop annotations this pass consumes.
NUM_STAGES_KEY = "num_stages"
#: ``T.Pipelined``'s manual schedule (order, stage, group), meaningless in order.
SCHEDULE_KEYS = ("tl.pipeline_order", "tl.pipeline_stage", "tl.pipeline_group")


def in_order(loop: tirx.For) -> tirx.For:
    """``loop`` as a plain serial loop: its pipelining annotations dropped."""
    annotations = dict(loop.annotations.items()) if loop.annotations else {}
    for key in (LOOP_KIND_KEY, NUM_STAGES_KEY, *SCHEDULE_KEYS):
        annotations.pop(key, None)
    return tirx.For(
        loop.loop_var,
        loop.min,
        loop.extent,
        tirx.ForKind.SERIAL,
        loop.body,
        annotations=annotations,
    )


def lower_pipelined_loops(stmt: tirx.Stmt) -> tirx.Stmt:
    """Return ``stmt`` with every pipelined loop turned into a plain serial loop."""

    def rewrite(loop: tirx.For) -> tirx.For:
        annotations = dict(loop.annotations.items()) if loop.annotations else {}
        if str(annotations.get(LOOP_KIND_KEY, "")) != "pipelined":
            return loop
        return in_order(loop)

    return tvm_ffi.structural_map(stmt, (tirx.For, rewrite), order="post")


@dataclass(frozen=True)
class LowerPipelinedLoopsPass(PrimFuncPass):
    """Run ``T.Pipelined`` loops in order: drop their pipelining annotations."""

    name: ClassVar[str] = "lower-pipelined-loops"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its pipelined loops made plain serial loops."""
        return lower_pipelined_loops(body)
