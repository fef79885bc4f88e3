"""`simplify`: TVM's arithmetic simplification of every PrimFunc.

A float division by a constant zero is first written as its IEEE result
(`tl_ir.float_division`): TVM's constant folder stops the build on one, and earlier
passes make them legitimately (a tile filled with 0.0 forwarded into ``A[i] / z[i]``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import tvm
from tvm import tirx

from tl_ir.float_division import divisions_by_zero_as_products
from tl_passes.pass_base import Pass, PassContext, replace_functions


@dataclass(frozen=True)
class SimplifyPass(Pass):
    """Simplify index and value expressions (``tvm.tirx.transform.StmtSimplify``)."""

    name: ClassVar[str] = "simplify"

    def run(self, mod: tvm.IRModule, ctx: PassContext) -> tvm.IRModule:
        """Return ``mod`` with every PrimFunc simplified."""
        updates = {}
        for global_var, func in mod.functions.items():
            if isinstance(func, tirx.PrimFunc):
                body = divisions_by_zero_as_products(func.body)
                if not body.same_as(func.body):
                    updates[global_var] = func.with_body(body)
        return tvm.tirx.transform.StmtSimplify()(replace_functions(mod, updates))
