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

The same holds for memory the kernel writes: ``start = Offsets[0]`` followed by
``Offsets[0] = start + 8`` and ``end = Offsets[0] + 40`` makes ``end - start`` 48, but
substituting ``start`` by ``Offsets[0]`` would read ``Offsets`` after the write and
prove 40. So `reads_assigned` also answers yes for a read of any buffer the body writes
(a store, a tile op's written region, an atomic, an address or handle passed to a call):
a value reading one is not known where it is substituted.
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


def _is_buffer(var: Any) -> bool:
    """Whether ``var`` names a buffer (its type is a buffer type), not a scalar value."""
    return "BufferType" in type(getattr(var, "ty", None)).__name__


class ScalarBindings:
    """The let bindings and scalar stores of one kernel body."""

    def __init__(self, body: Any) -> None:
        """Record the let bindings (``lets``) and the stores to scalars of ``body``."""
        #: Every let-bound variable of the body with its value.
        self.lets: dict[Any, Any] = {}
        self._stores: dict[Any, list[Any]] = {}
        #: The buffers the body writes other than by a scalar's store.
        self._written: set[Any] = set()

        def bind(node: Any) -> None:
            self.lets[node.var] = node.value

        def record(store: Any) -> None:
            if _is_scalar(store.buffer):
                self._stores.setdefault(store.buffer, []).append(store.value)
            else:
                self._written.add(store.buffer)

        for kind in (tirx.Bind, tirx.LetStmt):
            tvm_ffi.structural_walk(body, (kind, bind), order="pre")
        tvm_ffi.structural_walk(body, (tirx.BufferStore, record), order="pre")
        tvm_ffi.structural_walk(body, (tvm.ir.Call, self._record_call_writes), order="pre")

    def _record_call_writes(self, call: Any) -> None:
        """Buffers a call may write: a ``tl.region`` with the write bit, the buffer under an
        ``address_of``, and any buffer whose data pointer or handle is taken
        (``buffer_data``, ``tvm_access_ptr``, a buffer passed to an extern call)."""
        name = str(getattr(call.op, "name", ""))
        args = list(call.args)
        if name == "tl.region":
            mask = args[1] if len(args) > 1 else None
            writes = not isinstance(mask, tirx.IntImm) or bool(int(mask.value) & 2)
            if writes and args and isinstance(args[0], tvm.ir.TensorLoad):
                self._written.add(args[0].source)
            return
        for arg in args:
            if isinstance(arg, tvm.ir.TensorLoad) and name.endswith("address_of"):
                self._written.add(arg.source)
            elif isinstance(arg, tvm.ir.Var) and _is_buffer(arg):
                self._written.add(arg)

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
        more than once, or one past the substitution depth) or a buffer the body writes."""
        hit = [False]

        def visit(node: Any) -> None:
            if node.source in self._stores or node.source in self._written:
                hit[0] = True

        tvm_ffi.structural_walk(expr, (tvm.ir.TensorLoad, visit), order="pre")
        return hit[0]
