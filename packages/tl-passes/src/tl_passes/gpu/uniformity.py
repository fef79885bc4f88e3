"""Which values of a tile-level kernel may differ between the threads of a block.

`gpu-insert-barriers` may keep a barrier inside an ``if`` or ``while`` only
when every thread of the block takes the same path there (the condition is
block-uniform); otherwise some threads would wait at a barrier the others
never reach. `ThreadDependence` answers that question for a kernel body.

A value is thread-dependent when it is computed from a thread index
(``T.get_thread_binding``, the ``threads`` variables of ``T.Kernel``), from
the loop variable of a ``T.Parallel`` nest (each thread runs its own
iterations), or from a thread-local buffer (``T.alloc_var``,
``T.alloc_local``, fragments) that was written with such a value or under
such a condition. Loads of global and shared memory at uniform indices are
uniform (a race on them is a bug of its own). The analysis runs to a fixed
point, so a thread-dependent value flowing through several local variables
is found.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir import scopes
from tl_passes.gpu.layout import is_buffer_load, loop_kind_of

#: Storage scopes whose buffers each thread holds its own copy of.
THREAD_LOCAL_SCOPES = (*scopes.THREAD_PRIVATE_SCOPES, scopes.FRAGMENT)


def _scope(buffer: Any) -> str:
    return str(buffer.ty.storage_scope)


class ThreadDependence:
    """The thread-dependent variables and thread-local buffers of one kernel body.

    Args:
        body: the kernel body (tile level, before `gpu-lower-tile-ops`).
        thread_vars: the kernel's thread index variables.
    """

    def __init__(self, body: Any, thread_vars: Sequence[Any]) -> None:
        self._vars: list[Any] = list(thread_vars)
        self._buffers: set[str] = set()
        changed = True
        while changed:
            before = (len(self._vars), len(self._buffers))
            self._walk(body, divergent=False)
            changed = (len(self._vars), len(self._buffers)) != before

    def depends(self, expr: Any) -> bool:
        """Whether the expression ``expr`` may differ between the threads of a block."""
        found = [False]

        def visit(node: Any) -> None:
            if found[0]:
                return
            if (isinstance(node, tvm.ir.Var) and self._has_var(node)) or (
                is_buffer_load(node) and str(node.source.name) in self._buffers
            ):
                found[0] = True

        tvm_ffi.structural_walk(expr, visit, order="pre")
        return found[0]

    def is_uniform(self, condition: Any) -> bool:
        """Whether every thread of the block evaluates ``condition`` the same way."""
        return not self.depends(condition)

    def _has_var(self, var: Any) -> bool:
        return any(var.same_as(known) for known in self._vars)

    def _add_var(self, var: Any) -> None:
        if not self._has_var(var):
            self._vars.append(var)

    def _taint_store(self, buffer: Any, divergent: bool, *values: Any) -> None:
        if _scope(buffer) not in THREAD_LOCAL_SCOPES:
            return
        if divergent or any(self.depends(value) for value in values):
            self._buffers.add(str(buffer.name))

    def _walk(self, stmt: Any, divergent: bool) -> None:
        from tl_ir import ops as tile

        if stmt is None:
            return
        if isinstance(stmt, tirx.SeqStmt):
            for child in stmt.seq:
                self._walk(child, divergent)
        elif isinstance(stmt, tirx.For):
            bounds_vary = self.depends(stmt.min) or self.depends(stmt.extent)
            if loop_kind_of(stmt) == "parallel" or bounds_vary or divergent:
                self._add_var(stmt.loop_var)
            self._walk(stmt.body, divergent or bounds_vary)
        elif isinstance(stmt, tirx.IfThenElse):
            inner = divergent or self.depends(stmt.condition)
            self._walk(stmt.then_case, inner)
            self._walk(stmt.else_case, inner)
        elif isinstance(stmt, tirx.While):
            self._walk(stmt.body, divergent or self.depends(stmt.condition))
        elif isinstance(stmt, tirx.BufferStore):
            self._taint_store(stmt.buffer, divergent, stmt.value, *stmt.indices)
        elif isinstance(stmt, tirx.Evaluate) and tile.is_tile_op(stmt.value):
            for buffer in _written_regions(stmt.value):
                self._taint_store(buffer, divergent, *stmt.value.args)
        else:
            var = getattr(stmt, "var", None)
            value = getattr(stmt, "value", None)
            bound = isinstance(var, tvm.ir.Var) and value is not None
            if bound and (divergent or self.depends(value)):
                self._add_var(var)
            body = getattr(stmt, "body", None)
            if isinstance(body, tirx.Stmt):
                self._walk(body, divergent)


def _written_regions(call: Any) -> list[Any]:
    """The buffers of the regions a tile-op call writes."""
    return [
        arg.args[0].source
        for arg in call.args
        if isinstance(arg, tvm.ir.Call)
        and str(getattr(arg.op, "name", "")) == "tl.region"
        and int(arg.args[1].value) & 2
    ]


def written_buffers(stmt: Any) -> set[str]:
    """Names of the buffers ``stmt`` writes (stores and tile-op destinations)."""
    from tl_ir import ops as tile

    found: set[str] = set()

    def visit_store(store: Any) -> None:
        found.add(str(store.buffer.name))

    def visit_call(call: Any) -> None:
        if tile.is_tile_op(call):
            found.update(str(buffer.name) for buffer in _written_regions(call))

    tvm_ffi.structural_walk(stmt, (tirx.BufferStore, visit_store), order="pre")
    tvm_ffi.structural_walk(stmt, (tvm.ir.Call, visit_call), order="pre")
    return found


def loaded_buffers(expr: Any) -> set[str]:
    """Names of the buffers the expression ``expr`` reads."""
    found: set[str] = set()

    def visit(node: Any) -> None:
        if is_buffer_load(node):
            found.add(str(node.source.name))

    tvm_ffi.structural_walk(expr, visit, order="pre")
    return found
