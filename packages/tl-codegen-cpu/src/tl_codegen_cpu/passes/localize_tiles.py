"""`cpu-localize-tiles`: shared, fragment and local tiles become block-local CPU arrays.

On the CPU a block runs on one core, so ``shared``/``shared.dyn`` tiles,
``local.fragment`` tiles and thread-private ``local`` arrays are all plain
arrays allocated inside the grid's parallel loop (one copy per running
block). They get scope ``global``: TVM 0.27's ``LowerTVMBuiltin`` turns small
allocations of any other scope into heap workspaces, which LLVM cannot keep
in registers. Where the arrays live (stack or TVM workspace)
is decided later (`cpu-stack-block-locals` on the C path).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tvm import tirx

from tl_ir import scopes
from tl_passes.buffer_rewrite import rescope_buffers
from tl_passes.pass_base import PassContext, PrimFuncPass

#: The kernel-language scopes that become block-local arrays.
BLOCK_LOCAL_SCOPES: tuple[str, ...] = (
    *scopes.SHARED_SCOPES,
    scopes.FRAGMENT,
    *scopes.THREAD_PRIVATE_SCOPES,
)


@dataclass(frozen=True)
class CpuLocalizeTilesPass(PrimFuncPass):
    """Rescope every allocated tile of a `BLOCK_LOCAL_SCOPES` scope to ``global``."""

    name: ClassVar[str] = "cpu-localize-tiles"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its block-local tiles in scope ``global``."""

        def choose(buffer: Any) -> str | None:
            scope = str(buffer.ty.storage_scope)
            return scopes.GLOBAL if scope in BLOCK_LOCAL_SCOPES else None

        return rescope_buffers(body, choose)
