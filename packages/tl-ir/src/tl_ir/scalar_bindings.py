"""The values a kernel body gives its names, substituted into an expression.

A run-time expression of a kernel (a tile extent ``kv_end - kv_start``, a loop extent
``span``) often names values bound earlier in the body: let-bound variables, and
scalars the body assigns (``x = expr`` in a kernel body is a one-element thread-private
buffer and a store to it). `ScalarBindings.resolve` replaces each let-bound variable
and each read of a scalar stored exactly once by its value, so TVM's arithmetic
analyzer sees what the expression computes (``kv_end - kv_start`` with
``kv_end = base + (k + 1) * block_N`` and ``kv_start = base + k * block_N`` is
``block_N``). A scalar stored more than once is left as a read: its value depends on
where it is read, so nothing is substituted for it, and `reads_assigned` tells a
caller that needs an exact value that the result still depends on such a scalar.
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir import scopes

__all__ = ["ScalarBindings"]

#: How many bound names one substitution follows (a chain, not a cycle).
_MAX_DEPTH = 16


def _is_scalar(buffer: Any) -> bool:
    """Whether ``buffer`` is a scalar variable: one thread-private element."""
    if not scopes.is_local(buffer):
        return False
    return all(isinstance(e, tirx.IntImm) and int(e.value) == 1 for e in buffer.ty.shape)


class ScalarBindings:
    """The let bindings and scalar stores of one kernel body."""

    def __init__(self, body: Any) -> None:
        """Record the let bindings (``lets``) and the stores to scalars of ``body``."""
        #: Every let-bound variable of the body with its value.
        self.lets: dict[Any, Any] = {}
        self._stores: dict[Any, list[Any]] = {}

        def bind(node: Any) -> None:
            self.lets[node.var] = node.value

        def record(store: Any) -> None:
            if _is_scalar(store.buffer):
                self._stores.setdefault(store.buffer, []).append(store.value)

        for kind in (tirx.Bind, tirx.LetStmt):
            tvm_ffi.structural_walk(body, (kind, bind), order="pre")
        tvm_ffi.structural_walk(body, (tirx.BufferStore, record), order="pre")

    def resolve(self, expr: Any, depth: int = 0) -> Any:
        """``expr`` with every let-bound variable and every read of a scalar stored once
        replaced by its value, following the values' own names up to a fixed depth."""

        def load(node: Any) -> Any:
            values = self._stores.get(node.source, [])
            if depth < _MAX_DEPTH and len(values) == 1:
                return self.resolve(values[0], depth + 1)
            return node

        def var(node: Any) -> Any:
            value = self.lets.get(node)
            if depth < _MAX_DEPTH and value is not None:
                return self.resolve(value, depth + 1)
            return node

        loaded = tvm_ffi.structural_map(expr, (tvm.ir.TensorLoad, load), order="post")
        return tvm_ffi.structural_map(loaded, (tvm.ir.Var, var), order="post")

    def reads_assigned(self, expr: Any) -> bool:
        """Whether ``expr`` reads a scalar the body assigns (after `resolve`: one stored
        more than once, or one past the substitution depth)."""
        hit = [False]

        def visit(node: Any) -> None:
            if node.source in self._stores:
                hit[0] = True

        tvm_ffi.structural_walk(expr, (tvm.ir.TensorLoad, visit), order="pre")
        return hit[0]
