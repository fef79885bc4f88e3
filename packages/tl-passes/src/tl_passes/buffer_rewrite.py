"""Helpers shared by passes that replace buffers (a buffer is a ``Var`` of buffer type in 0.27)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir import scopes


def allocated_buffers(stmt: tirx.Stmt) -> list[Any]:
    """The buffers allocated (``AllocBuffer``) anywhere in ``stmt``, in program order."""
    found: list[Any] = []
    tvm_ffi.structural_walk(stmt, (tirx.AllocBuffer, lambda a: found.append(a.buffer)), order="pre")
    return found


def with_scope(buffer: Any, scope: str) -> Any:
    """A new buffer like ``buffer`` (name, shape, dtype, alignment) in storage ``scope``."""
    return tirx.decl_buffer(
        buffer.shape,
        str(buffer.dtype),
        name=str(buffer.name),
        scope=scope,
        data_alignment=max(int(buffer.data_alignment), 64),
    )


def substitute_vars(stmt: tirx.Stmt, mapping: dict[Any, Any]) -> tirx.Stmt:
    """Replace every use of the Vars (or buffers) that are keys of ``mapping`` by their values.

    Values may be Vars or (for scalar Vars) any PrimExpr. No simplification runs.
    """
    if not mapping:
        return stmt

    def replace(var: Any) -> Any:
        return mapping.get(var, var)

    return tvm_ffi.structural_map(stmt, (tvm.ir.Var, replace), order="post")


def rescope_buffers(stmt: tirx.Stmt, choose: Callable[[Any], str | None]) -> tirx.Stmt:
    """Give every allocated buffer for which ``choose(buffer)`` returns a scope that scope."""
    mapping = {}
    for buffer in allocated_buffers(stmt):
        scope = choose(buffer)
        if scope is not None and scope != scopes.buffer_scope(buffer):
            mapping[buffer] = with_scope(buffer, scope)
    return substitute_vars(stmt, mapping)
