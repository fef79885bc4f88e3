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

from tl_ir.launch import (
    LOOP_KIND_KEY,
    NUM_STAGES_KEY,
    PIPELINE_SCHEDULE_KEYS,
    annotations_without,
    rebuild_loop,
)
from tl_passes.pass_base import PassContext, PrimFuncPass


def in_order(loop: tirx.For) -> tirx.For:
    """``loop`` as a plain serial loop: its pipelining annotations dropped."""
    annotations = annotations_without(
        loop, (LOOP_KIND_KEY, NUM_STAGES_KEY, *PIPELINE_SCHEDULE_KEYS)
    )
    return rebuild_loop(loop, kind=tirx.ForKind.SERIAL, annotations=annotations)


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
