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

from tl_passes.pass_base import PassContext, PrimFuncPass

#: The loop annotations this pass consumes.
LOOP_KIND_KEY = "tl.loop_kind"
NUM_STAGES_KEY = "num_stages"


def lower_pipelined_loops(stmt: tirx.Stmt) -> tirx.Stmt:
    """Return ``stmt`` with every pipelined loop turned into a plain serial loop."""

    def rewrite(loop: tirx.For) -> tirx.For:
        annotations = dict(loop.annotations.items()) if loop.annotations else {}
        if str(annotations.get(LOOP_KIND_KEY, "")) != "pipelined":
            return loop
        annotations.pop(LOOP_KIND_KEY, None)
        annotations.pop(NUM_STAGES_KEY, None)
        return tirx.For(
            loop.loop_var,
            loop.min,
            loop.extent,
            tirx.ForKind.SERIAL,
            loop.body,
            annotations=annotations,
        )

    return tvm_ffi.structural_map(stmt, (tirx.For, rewrite), order="post")


@dataclass(frozen=True)
class LowerPipelinedLoopsPass(PrimFuncPass):
    """Run ``T.Pipelined`` loops in order: drop their pipelining annotations."""

    name: ClassVar[str] = "lower-pipelined-loops"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its pipelined loops made plain serial loops."""
        return lower_pipelined_loops(body)
