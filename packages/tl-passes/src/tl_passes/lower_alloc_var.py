"""`lower-alloc-var`: ``T.alloc_var`` scalars become one-element thread-private arrays.

``T.alloc_var(dtype, init=...)`` (and a scalar assigned inside a kernel) is a
one-element buffer of scope ``local.var``; assignments are stores to element
0. This target-neutral pass moves them to scope ``local`` (a thread-private
array), which every code generator understands; a later pass places them
(registers on GPUs, block-local stack slots on the CPU, which LLVM and gcc
promote to registers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tvm import tirx

from tl_ir import scopes
from tl_passes.buffer_rewrite import rescope_buffers
from tl_passes.pass_base import PassContext, PrimFuncPass


@dataclass(frozen=True)
class LowerAllocVarPass(PrimFuncPass):
    """Give every ``local.var`` buffer the scope ``scope`` (default ``local``).

    Args:
        scope: the storage scope the scalars get.
    """

    name: ClassVar[str] = "lower-alloc-var"
    scope: str = scopes.LOCAL

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its ``local.var`` buffers rescoped."""

        def choose(buffer: Any) -> str | None:
            return self.scope if str(buffer.ty.storage_scope) == scopes.LOCAL_VAR else None

        return rescope_buffers(body, choose)
