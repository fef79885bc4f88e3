"""`simplify`: TVM's arithmetic simplification of every PrimFunc."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import tvm

from tl_passes.pass_base import Pass, PassContext


@dataclass(frozen=True)
class SimplifyPass(Pass):
    """Simplify index and value expressions (``tvm.tirx.transform.StmtSimplify``)."""

    name: ClassVar[str] = "simplify"

    def run(self, mod: tvm.IRModule, ctx: PassContext) -> tvm.IRModule:
        """Return ``mod`` with every PrimFunc simplified."""
        return tvm.tirx.transform.StmtSimplify()(mod)
