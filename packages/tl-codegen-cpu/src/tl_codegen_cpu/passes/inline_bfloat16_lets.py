"""`cpu-inline-bfloat16-lets`: no ``Let`` binds a value computed from bfloat16.

TVM's bfloat16 legalization, inside its C and LLVM code generators, rewrites bfloat16
loads and conversions in expressions but not in the value of a ``Let``: there a
bfloat16 load was converted to float32 as the integer its bits spell (0.5 read as
16128.0), so ``T.exp`` of any value read from a bfloat16 tensor (`cpu-vectorize-exp`
binds its argument) came out ``inf``, a max of two bfloat16 loads read garbage, and on
``llvm`` the legalization's copies of a rounding bound one variable twice ("Let cannot
bind the same var to two different values"). This pass, which runs after the passes
that introduce ``Let`` (`cpu-vectorize-exp`, `cpu-max-min-ignore-nan`), puts such a
value in place of each use of its variable. Values not computed from bfloat16 stay
bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_passes.buffer_rewrite import substitute_vars
from tl_passes.pass_base import PassContext, PrimFuncPass

__all__ = ["CpuInlineBfloat16LetsPass", "inline_bfloat16_lets", "mentions_bfloat16"]


def mentions_bfloat16(value: Any) -> bool:
    """Whether any node of the expression ``value`` has a bfloat16 dtype."""
    found = False

    def visit(node: Any) -> None:
        nonlocal found
        dtype = getattr(getattr(node, "ty", None), "dtype", None)
        if dtype is not None and str(dtype).startswith("bfloat16"):
            found = True

    tvm_ffi.structural_walk(value, (tvm.ir.Expr, visit), order="pre")
    return found


def inline_bfloat16_lets(stmt: tirx.Stmt) -> tirx.Stmt:
    """``stmt`` with every ``Let`` expression whose value mentions bfloat16 inlined."""

    def inline(node: Any) -> Any:
        if not mentions_bfloat16(node.value):
            return node
        return substitute_vars(node.body, {node.var: node.value})

    # Inlining a value into the value of a Let it encloses (cpu-vectorize-exp's chain
    # of Lets all derive from its argument) makes that Let one to inline: repeat.
    while True:
        rewritten = tvm_ffi.structural_map(stmt, (tirx.Let, inline), order="post")
        if rewritten.same_as(stmt):
            return stmt
        stmt = rewritten


@dataclass(frozen=True)
class CpuInlineBfloat16LetsPass(PrimFuncPass):
    """Inline each ``Let`` of a value computed from bfloat16 (module docstring)."""

    name: ClassVar[str] = "cpu-inline-bfloat16-lets"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with no ``Let`` binding a value computed from bfloat16."""
        return inline_bfloat16_lets(body)
