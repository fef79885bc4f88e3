"""`cpu-eager-selects`: an ``if_then_else`` whose branches are safe to compute becomes a select.

``T.if_then_else(c, a, b)`` promises that only the chosen branch is evaluated (it guards
loads that would be out of bounds). TVM lowers it as a branch, which keeps a loop scalar
(`cpu-lower-parallel-loops` does not vectorize it), and where it does reach LLVM's
vectorizer inside a vector loop it is scalarized with a branch per element, or becomes a
masked store when the other branch rewrites the stored element (``vmaskmovps``, which
AMD's cores run microcoded). TileLang's top-k marks the maxima of each row that way::

    expand_max_idx[i, j] = T.if_then_else(max_val[i] == logits_frag[i, j], j, expand_max_idx[i, j])
    logits_frag[i, j] = T.if_then_else(max_val[i] == logits_frag[i, j], -10000.0, logits_frag[i, j])

and ran 3.5x slower on ``llvm`` than on ``c`` (0.88 against 3.1 ms at 8192 x 64).

When neither branch can fault, computing both and selecting is the same value:
``tirx.Select``, which both compilers vectorize (a compare, a blend, a plain store).
A branch is safe when it reads memory only at the element its statement stores (that
element exists: the statement writes it) and calls nothing but pure math; the
condition is evaluated either way. Anything else keeps its ``if_then_else``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.passes.mark_independent_loops import PURE_CALLS
from tl_ir.builtin_ops import builtin_op_names
from tl_passes.pass_base import PassContext, PrimFuncPass

#: The op's registered name (``prim.if_then_else`` in TVM 0.27).
IF_THEN_ELSE_OPS = builtin_op_names("if_then_else")


def _safe(branch: Any, store: tirx.BufferStore) -> bool:
    """Whether evaluating ``branch`` cannot fault: loads only of ``store``'s element,
    calls only of pure math."""
    safe = [True]

    def visit_load(load: Any) -> None:
        if not (
            load.source.same_as(store.buffer)
            and tvm_ffi.structural_equal(list(load.indices), list(store.indices))
        ):
            safe[0] = False

    def visit_call(call: Any) -> None:
        name = str(call.op.name) if isinstance(call.op, tvm.ir.Op) else ""
        if name not in PURE_CALLS and name not in IF_THEN_ELSE_OPS:
            safe[0] = False

    tvm_ffi.structural_walk(
        branch, [(tvm.ir.TensorLoad, visit_load), (tvm.ir.Call, visit_call)], order="post"
    )
    return safe[0]


def eager_selects(stmt: tirx.Stmt) -> tirx.Stmt:
    """Return ``stmt`` with every safe ``if_then_else`` of a stored value a select."""

    def rewrite_store(store: tirx.BufferStore) -> tirx.BufferStore:
        changed = [False]

        def rewrite_call(call: Any) -> Any:
            op = call.op
            if not isinstance(op, tvm.ir.Op) or str(op.name) not in IF_THEN_ELSE_OPS:
                return call
            condition, then_value, else_value = call.args
            if not (_safe(then_value, store) and _safe(else_value, store)):
                return call
            changed[0] = True
            return tirx.Select(condition, then_value, else_value)

        value = tvm_ffi.structural_map(store.value, (tvm.ir.Call, rewrite_call), order="post")
        if not changed[0]:
            return store
        return tirx.BufferStore(store.buffer, value, list(store.indices))

    return tvm_ffi.structural_map(stmt, (tirx.BufferStore, rewrite_store), order="post")


@dataclass(frozen=True)
class CpuEagerSelectsPass(PrimFuncPass):
    """Turn ``if_then_else`` with branches safe to compute into selects (module doc)."""

    name: ClassVar[str] = "cpu-eager-selects"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its safe ``if_then_else`` calls as selects."""
        return eager_selects(body)
