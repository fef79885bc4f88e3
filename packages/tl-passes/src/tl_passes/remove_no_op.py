"""`remove-no-op`: drop statements without effect (empty loops, self-assignments)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import tvm

from tl_passes.pass_base import Pass, PassContext


@dataclass(frozen=True)
class RemoveNoOpPass(Pass):
    """Remove no-op statements (``tvm.tirx.transform.RemoveNoOp``)."""

    name: ClassVar[str] = "remove-no-op"

    def run(self, mod: tvm.IRModule, ctx: PassContext) -> tvm.IRModule:
        """Return ``mod`` without no-op statements."""
        return tvm.tirx.transform.RemoveNoOp()(mod)
