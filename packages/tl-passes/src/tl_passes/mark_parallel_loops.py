"""`mark-parallel-loops`: put a marker call before every outermost parallel loop.

TVM's C codegen prints a parallel loop as a plain serial ``for``; a C toolchain
replaces the marker line it prints (``MARKER();``) with ``#pragma omp parallel for``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_passes.pass_base import Pass, PassContext, replace_functions

#: The default marker: an extern call the C toolchain rewrites into an OpenMP pragma.
PARALLEL_FOR_MARKER = "TL_OMP_PARALLEL_FOR"


def _contains_parallel_loop(stmt: tirx.Stmt) -> bool:
    found = False

    def visit(loop: tirx.For) -> None:
        nonlocal found
        if loop.kind == tirx.ForKind.PARALLEL:
            found = True

    tvm_ffi.structural_walk(stmt, (tirx.For, visit), order="post")
    return found


def mark_outermost_parallel_loops(stmt: tirx.Stmt, marker: str) -> tirx.Stmt:
    """Return ``stmt`` with ``Evaluate(call_extern(marker))`` before each outermost parallel loop.

    Nested parallel loops are made serial: OpenMP would serialize them anyway,
    and TVM's LLVM codegen refuses nested parallel regions.
    """

    def serialize_nested(loop: tirx.For) -> tirx.For:
        if loop.kind == tirx.ForKind.PARALLEL:
            return tirx.For(
                loop.loop_var,
                loop.min,
                loop.extent,
                tirx.ForKind.SERIAL,
                loop.body,
                annotations=loop.annotations,
            )
        return loop

    def rewrite(node: tirx.Stmt) -> tirx.Stmt:
        if isinstance(node, tirx.For) and node.kind == tirx.ForKind.PARALLEL:
            body = tvm_ffi.structural_map(node.body, (tirx.For, serialize_nested), order="post")
            loop = tirx.For(
                node.loop_var,
                node.min,
                node.extent,
                node.kind,
                body,
                annotations=node.annotations,
            )
            return tirx.SeqStmt([tirx.Evaluate(tirx.call_extern("int32", marker)), loop])
        if isinstance(node, tirx.SeqStmt):
            return tirx.SeqStmt([rewrite(s) for s in node.seq])
        if not _contains_parallel_loop(node):
            return node
        if isinstance(node, tirx.For):
            return tirx.For(
                node.loop_var,
                node.min,
                node.extent,
                node.kind,
                rewrite(node.body),
                annotations=node.annotations,
            )
        if isinstance(node, tirx.AttrStmt):
            return tirx.AttrStmt(node.node, node.attr_key, node.value, rewrite(node.body))
        if isinstance(node, tirx.IfThenElse):
            else_case = rewrite(node.else_case) if node.else_case is not None else None
            return tirx.IfThenElse(node.condition, rewrite(node.then_case), else_case)
        if isinstance(node, tirx.LetStmt):
            return tirx.LetStmt(node.var, node.value, rewrite(node.body))
        raise NotImplementedError(
            f"mark-parallel-loops: a parallel loop nested in a {type(node).__name__} "
            "statement is not handled yet"
        )

    return rewrite(stmt)


@dataclass(frozen=True)
class MarkParallelLoopsPass(Pass):
    """Insert ``marker()`` calls before outermost parallel loops (for the C toolchain).

    Args:
        marker: the extern function name of the marker call.
    """

    name: ClassVar[str] = "mark-parallel-loops"
    marker: str = PARALLEL_FOR_MARKER

    def run(self, mod: tvm.IRModule, ctx: PassContext) -> tvm.IRModule:
        """Return ``mod`` with every PrimFunc's outermost parallel loops marked."""
        updates = {}
        for global_var, func in mod.functions.items():
            if isinstance(func, tirx.PrimFunc) and _contains_parallel_loop(func.body):
                updates[global_var] = func.with_body(
                    mark_outermost_parallel_loops(func.body, self.marker)
                )
        return replace_functions(mod, updates)
