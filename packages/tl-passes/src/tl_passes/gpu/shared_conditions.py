"""`gpu-shared-conditions`: an ``if`` whose condition reads shared memory tests a local copy.

TVM's barrier planner for dynamic shared memory (``ThreadSync("shared.dyn")``, run
by its device lowering after these passes) records the shared accesses of
statements only, and stops with ``Check failed: (allow_append_) is false`` on a
shared load in an ``if`` condition (``if s_histogram[tx] >= k and ...:`` in
TileLang's top-k selector). This last pass stores each such condition into a
fresh one-element thread-local array just before the ``if`` and tests that
element instead: the same value, read at the same point of the thread's program,
and a statement the planner sees (its read of shared memory is ordered by the
barriers as any other read).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir import scopes
from tl_passes.pass_base import PassContext, PrimFuncPass


def reads_shared(expr: Any) -> bool:
    """Whether ``expr`` loads from a buffer in a shared scope."""
    found: list[bool] = []

    def visit(load: Any) -> None:
        if str(load.source.ty.storage_scope) in scopes.SHARED_SCOPES:
            found.append(True)

    tvm_ffi.structural_walk(expr, (tvm.ir.TensorLoad, visit))
    return bool(found)


def hoist_shared_conditions(body: Any) -> Any:
    """``body`` with every ``if`` whose condition reads shared memory preceded by the
    condition's store into a new local ``cond<N>`` element, which the ``if`` tests."""
    counter = [0]

    def rewrite(node: Any) -> Any:
        if not reads_shared(node.condition):
            return node
        counter[0] += 1
        flag = tirx.decl_buffer((1,), "bool", f"cond{counter[0]}", scope=scopes.LOCAL)
        zero = tirx.IntImm("int32", 0)
        test = tirx.IfThenElse(tirx.BufferLoad(flag, [zero]), node.then_case, node.else_case)
        return tirx.SeqStmt(
            [tirx.AllocBuffer(flag), tirx.BufferStore(flag, node.condition, [zero]), test]
        )

    return tvm_ffi.structural_map(body, (tirx.IfThenElse, rewrite), order="post")


@dataclass(frozen=True)
class GpuSharedConditionsPass(PrimFuncPass):
    """Test a local copy of each ``if`` condition that reads shared memory (module
    docstring); a function without one comes back unchanged."""

    name: ClassVar[str] = "gpu-shared-conditions"

    def transform_function(
        self, func: tirx.PrimFunc, function_name: str, ctx: PassContext
    ) -> tirx.PrimFunc:
        """``func`` with its shared-reading ``if`` conditions hoisted into locals."""
        return func.with_body(hoist_shared_conditions(func.body))
