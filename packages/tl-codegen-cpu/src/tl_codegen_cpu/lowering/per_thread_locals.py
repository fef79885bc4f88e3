"""Thread-local arrays that live across region boundaries become per-thread arrays.

After `thread_regions` has split a block into loop nests over its threads, a
``local`` array (``T.alloc_local``, ``T.alloc_var``, a scalar assignment) that
one thread writes in one nest and reads in another, or that a nest repeated
by an enclosing loop carries from one iteration to the next, must keep one
copy per thread: it gets a leading dimension of the block's thread count and
every access is indexed by the thread's linear index. Code that runs once per
block (a loop bound or branch condition every thread computes alike) reads
thread 0's copy. Arrays used within one nest only stay as they were (gcc and
LLVM keep them in registers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.thread_ir import THREAD_NEST_KEY, ThreadSpace, is_local, uses_any
from tl_ir.errors import UnsupportedError


def is_thread_nest(stmt: Any) -> bool:
    """Whether ``stmt`` is the outermost loop of a region's nest over the threads."""
    return (
        isinstance(stmt, tirx.For)
        and stmt.annotations is not None
        and THREAD_NEST_KEY in stmt.annotations
    )


@dataclass
class _Usage:
    #: loop depth of the allocation; None when it sits inside a nest
    alloc_depth: int | None = None
    nests: set[int] = field(default_factory=set)
    deepest_nest: int = 0
    once_per_block: bool = False


class _Survey:
    def __init__(self) -> None:
        self.usage: dict[Any, _Usage] = {}
        self._nests = 0

    def _locals_in(self, node: Any) -> set[Any]:
        found: set[Any] = set()

        def load(n: Any) -> None:
            if is_local(n.source):
                found.add(n.source)

        def store(n: Any) -> None:
            if is_local(n.buffer):
                found.add(n.buffer)

        tvm_ffi.structural_walk(
            node, [(tvm.ir.TensorLoad, load), (tirx.BufferStore, store)], order="post"
        )
        return found

    def visit(self, stmt: Any, depth: int) -> None:
        if is_thread_nest(stmt):
            self._nests += 1
            for buffer in self._locals_in(stmt):
                usage = self.usage.setdefault(buffer, _Usage())
                usage.nests.add(self._nests)
                usage.deepest_nest = max(usage.deepest_nest, depth)

            def inner_alloc(alloc: Any) -> None:
                self.usage.setdefault(alloc.buffer, _Usage()).alloc_depth = None

            tvm_ffi.structural_walk(stmt, (tirx.AllocBuffer, inner_alloc), order="post")
            return
        if isinstance(stmt, tirx.SeqStmt):
            for item in stmt.seq:
                self.visit(item, depth)
        elif isinstance(stmt, tirx.For | tirx.While):
            self._once(stmt.condition if isinstance(stmt, tirx.While) else stmt.extent)
            if isinstance(stmt, tirx.For):
                self._once(stmt.min)
            self.visit(stmt.body, depth + 1)
        elif isinstance(stmt, tirx.IfThenElse):
            self._once(stmt.condition)
            self.visit(stmt.then_case, depth)
            if stmt.else_case is not None:
                self.visit(stmt.else_case, depth)
        elif isinstance(stmt, tirx.AttrStmt | tirx.LetStmt):
            self._once(stmt.value)
            self.visit(stmt.body, depth)
        elif isinstance(stmt, tirx.AllocBuffer):
            if is_local(stmt.buffer):
                self.usage.setdefault(stmt.buffer, _Usage()).alloc_depth = depth
        else:
            self._once(stmt)

    def _once(self, node: Any) -> None:
        for buffer in self._locals_in(node):
            self.usage.setdefault(buffer, _Usage()).once_per_block = True

    def expanded(self) -> list[Any]:
        chosen = []
        for buffer, usage in self.usage.items():
            if usage.alloc_depth is None:
                continue
            contexts = len(usage.nests) + int(usage.once_per_block)
            if contexts >= 2 or usage.deepest_nest > usage.alloc_depth:
                chosen.append(buffer)
        return chosen


def expand_per_thread_locals(block: Any, space: ThreadSpace, where: str) -> Any:
    """Return ``block`` (split into thread nests) with its cross-region locals expanded.

    Raises:
        UnsupportedError: a thread count that is not a compile-time constant, or a
            local array used other than through element loads and stores.
    """
    survey = _Survey()
    survey.visit(block, 0)
    chosen = survey.expanded()
    if not chosen:
        return block
    count = space.count()
    replacement = {
        old: tirx.decl_buffer(
            (count, *old.shape), str(old.dtype), name=str(old.name), scope=str(old.ty.storage_scope)
        )
        for old in chosen
    }

    def indexed(thread: Any) -> tuple[Any, Any]:
        def load(node: Any) -> Any:
            new = replacement.get(node.source)
            return node if new is None else tirx.BufferLoad(new, [thread, *node.indices])

        def store(node: Any) -> Any:
            new = replacement.get(node.buffer)
            if new is None:
                return node
            return tirx.BufferStore(new, node.value, [thread, *node.indices])

        return load, store

    in_nest_load, in_nest_store = indexed(space.linear_index())

    def nest(loop: Any) -> Any:
        if not is_thread_nest(loop):
            return loop
        return tvm_ffi.structural_map(
            loop,
            [(tvm.ir.TensorLoad, in_nest_load), (tirx.BufferStore, in_nest_store)],
            order="post",
        )

    result = tvm_ffi.structural_map(block, (tirx.For, nest), order="post")
    once_load, once_store = indexed(tirx.const(0, "int32"))

    def alloc(node: Any) -> Any:
        new = replacement.get(node.buffer)
        return node if new is None else tirx.AllocBuffer(new)

    result = tvm_ffi.structural_map(
        result,
        [(tvm.ir.TensorLoad, once_load), (tirx.BufferStore, once_store), (tirx.AllocBuffer, alloc)],
        order="post",
    )
    if uses_any(result, set(chosen)):
        names = ", ".join(str(b.name) for b in chosen if uses_any(result, {b}))
        raise UnsupportedError(
            f"{where}: the thread-local array(s) {names} live across a barrier and are used "
            "other than through element loads and stores (an address taken?)"
        )
    return result
