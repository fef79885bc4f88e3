"""`cpu-inline-vector-loop-binds`: no scalar name or local array inside a vectorized loop.

A scalar name a kernel assigns inside a ``T.vectorized`` loop (``idx = tx * L + v``
then ``loc[v] = S[idx // 32, idx % 32]``) is a one-element local buffer allocated in
the loop's body (or a ``Bind``); TVM's vectorizer keeps such a buffer one element
for all lanes, so on ``llvm`` every lane used the last lane's value (480 of 512
elements wrong in TileLang's fine-grained dequantize example), silently. (``c`` prints
vectorized loops as serial ones: right.)

So, in a vectorized loop's body, a scalar stored once (or a ``Bind``), whose value
reads no memory the loop writes, is put in place of its reads (the value is then
computed lane by lane) and its allocation dropped; a loop that keeps a local
allocation or a ``Bind`` (a scalar stored twice, a value reading memory the loop
writes, a local array) becomes a serial loop, which is what it computes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir.launch import rebuild_loop
from tl_passes.buffer_rewrite import substitute_vars
from tl_passes.pass_base import PassContext, PrimFuncPass

__all__ = ["CpuInlineVectorLoopBindsPass", "inline_vector_loop_binds"]


def _handle(node: Any) -> int:
    return int(node.__chandle__())


def _written_buffers(body: Any) -> set[int]:
    """Buffers ``body`` stores to or hands to a call (which may write them)."""
    written: set[int] = set()

    def visit_store(store: Any) -> None:
        written.add(_handle(store.buffer))

    def visit_call(call: Any) -> None:
        for arg in call.args:
            if isinstance(arg, tvm.ir.TensorLoad):
                written.add(_handle(arg.source))
            elif (
                isinstance(arg, tvm.ir.Var) and "Buffer" in type(getattr(arg, "ty", None)).__name__
            ):
                written.add(_handle(arg))

    tvm_ffi.structural_walk(body, [(tirx.BufferStore, visit_store), (tvm.ir.Call, visit_call)])
    return written


def _reads(value: Any) -> set[int]:
    read: set[int] = set()
    tvm_ffi.structural_walk(value, (tvm.ir.TensorLoad, lambda load: read.add(_handle(load.source))))
    return read


def _is_scalar(buffer: Any) -> bool:
    shape = getattr(getattr(buffer, "ty", None), "shape", None)
    return shape is not None and all(
        isinstance(extent, tirx.IntImm) and int(extent.value) == 1 for extent in shape
    )


def _inline_in_loop(loop: Any) -> Any:
    """``loop`` (vectorized) with its body's scalars and Binds inlined, or made serial
    (module docstring)."""
    binds: list[Any] = []
    allocations: list[Any] = []
    stores: dict[int, list[Any]] = {}
    tvm_ffi.structural_walk(
        loop.body,
        [
            (tirx.Bind, binds.append),
            (tirx.AllocBuffer, allocations.append),
            (tirx.BufferStore, lambda s: stores.setdefault(_handle(s.buffer), []).append(s)),
        ],
    )
    if not binds and not allocations:
        return loop
    written = _written_buffers(loop.body)
    counts: dict[int, int] = {}
    for bind in binds:
        counts[_handle(bind.var)] = counts.get(_handle(bind.var), 0) + 1
    serial = rebuild_loop(loop, kind=tirx.ForKind.SERIAL)
    if any(counts[_handle(b.var)] != 1 or _reads(b.value) & written for b in binds):
        return serial
    scalars: dict[int, Any] = {}  # buffer handle -> its one store
    for allocation in allocations:
        buffer = allocation.buffer
        own = stores.get(_handle(buffer), [])
        if not _is_scalar(buffer) or len(own) != 1 or _reads(own[0].value) & written:
            return serial  # read before its store, stored twice, or an array: serial
        scalars[_handle(buffer)] = own[0]
    mapping: dict[Any, Any] = {}
    for bind in binds:  # in order: a later value may name an earlier variable
        mapping[bind.var] = substitute_vars(tirx.Evaluate(bind.value), mapping).value
    dropped = {_handle(bind) for bind in binds}
    dropped |= {_handle(store) for store in scalars.values()}
    dropped |= {_handle(allocation) for allocation in allocations}

    def value_of(load: Any) -> Any:
        store = scalars.get(_handle(load.source))
        return load if store is None else store.value

    def drop(node: Any) -> Any:
        return tirx.Evaluate(0) if _handle(node) in dropped else node

    body = tvm_ffi.structural_map(
        loop.body,
        [(tirx.Bind, drop), (tirx.AllocBuffer, drop), (tirx.BufferStore, drop)],
        order="post",
    )
    # A scalar's value may read another scalar stored before it: substitute until none.
    for _ in range(len(scalars) + 1):
        rewritten = tvm_ffi.structural_map(body, (tvm.ir.TensorLoad, value_of), order="post")
        if rewritten.same_as(body):
            break
        body = rewritten
    return rebuild_loop(loop, body=substitute_vars(body, mapping))


def inline_vector_loop_binds(stmt: tirx.Stmt) -> tirx.Stmt:
    """``stmt`` with no ``Bind`` inside a vectorized loop (module docstring)."""

    def visit(loop: Any) -> Any:
        if loop.kind != tirx.ForKind.VECTORIZED:
            return loop
        return _inline_in_loop(loop)

    return tvm_ffi.structural_map(stmt, (tirx.For, visit), order="post")


@dataclass(frozen=True)
class CpuInlineVectorLoopBindsPass(PrimFuncPass):
    """Inline the ``Bind`` statements of vectorized loops (module docstring)."""

    name: ClassVar[str] = "cpu-inline-vector-loop-binds"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with no ``Bind`` inside a vectorized loop."""
        return inline_vector_loop_binds(body)
