"""What the index expressions of a block body are, in terms of its loop and grid Vars.

Used by `atomic_ownership` to prove facts about the addresses a block touches:

* `binding_ranges`: the range of every grid axis, thread index and loop Var,
  and the value of every ``let``, outer first (for TVM's analyzer);
* `forwarded_scalars`: one-element ``local`` buffers that hold a single value
  computed from Vars alone (``idx = bx * block_M + i`` in a ``T.Parallel``
  body, which ``T.alloc_var`` lowering turns into ``idx[0] = ...``), so that
  an index ``B[idx[0], j]`` can be read as ``B[bx * block_M + i, j]``;
* `inline_index_values`: an expression with both substituted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir import scopes
from tl_ir.ops import ACCESS_READ, const_int
from tl_passes.buffer_rewrite import substitute_vars

_SCALAR_SCOPES = scopes.THREAD_PRIVATE_SCOPES
#: Calls that take an element's address (the callee may write through it).
_ADDRESS_CALLS = frozenset({"tirx.address_of", "tirx.tvm_access_ptr"})


def binding_ranges(
    body: tirx.Stmt, axes: Sequence[tuple[Any, Any]]
) -> list[tuple[Any, Any]] | None:
    """``(var, Range or value)`` for ``axes`` (``(var, extent)``, bound to
    ``[0, extent)``), then every loop and let of ``body``, outer first.

    A loop with a step other than 1 leaves its Var unbound (any value).

    Returns:
        None when a Var is bound twice (its range would be ambiguous).
    """
    bindings: list[tuple[Any, Any]] = [
        (var, tvm.ir.Range.from_min_extent(0, extent)) for var, extent in axes
    ]
    seen = {var for var, _ in axes}
    clash = False

    def add(var: Any, bound: Any) -> None:
        nonlocal clash
        if var in seen:
            clash = True
        seen.add(var)
        bindings.append((var, bound))

    def visit_loop(loop: Any) -> None:
        step = const_int(loop.step) if loop.step is not None else 1
        if step == 1:
            add(loop.loop_var, tvm.ir.Range.from_min_extent(loop.min, loop.extent))

    def visit_let(let: Any) -> None:
        add(let.var, let.value)

    tvm_ffi.structural_walk(
        body,
        [(tirx.For, visit_loop), ((tirx.Bind, tirx.LetStmt, tirx.Let), visit_let)],
        order="pre",
    )
    return None if clash else bindings


def _reads_memory(expr: Any) -> bool:
    found = False

    def visit(_: Any) -> None:
        nonlocal found
        found = True

    tvm_ffi.structural_walk(expr, [(tvm.ir.TensorLoad, visit), (tvm.ir.Call, visit)], order="pre")
    return found


def _accesses_of(node: Any, buffer: Any) -> tuple[int, int]:
    """(loads, stores) of ``buffer`` in ``node``. A tile-op region that may write it, and
    a call that may take its address, count as stores too (their element is also
    seen as a load)."""
    loads = stores = 0

    def visit_load(load: Any) -> None:
        nonlocal loads
        if load.source.same_as(buffer):
            loads += 1

    def visit_store(store: Any) -> None:
        nonlocal stores
        if store.buffer.same_as(buffer):
            stores += 1

    def visit_call(call: Any) -> None:
        nonlocal stores
        name = str(call.op.name) if isinstance(call.op, tvm.ir.Op) else ""
        names_it = any(
            isinstance(a, tvm.ir.TensorLoad) and a.source.same_as(buffer) for a in call.args
        )
        writes = name in _ADDRESS_CALLS or (
            name == "tl.region" and int(call.args[1]) != ACCESS_READ
        )
        if names_it and writes:
            stores += 1

    tvm_ffi.structural_walk(
        node,
        [
            (tvm.ir.TensorLoad, visit_load),
            (tirx.BufferStore, visit_store),
            (tvm.ir.Call, visit_call),
        ],
        order="pre",
    )
    return loads, stores


def _is_scalar(buffer: Any) -> bool:
    scope = scopes.buffer_scope(buffer)
    return scope in _SCALAR_SCOPES and [const_int(d) for d in buffer.shape] == [1]


def _bare_uses(node: Any, buffer: Any) -> bool:
    # The buffer Var itself as an argument (a pointer, a whole-buffer operand).
    found = False

    def visit(call: Any) -> None:
        nonlocal found
        if any(isinstance(a, tvm.ir.Var) and a.same_as(buffer) for a in call.args):
            found = True

    tvm_ffi.structural_walk(node, (tvm.ir.Call, visit), order="pre")
    return found


def forwarded_scalars(body: tirx.Stmt) -> dict[Any, Any]:
    """One-element ``local`` buffers of ``body`` whose every read sees one value.

    A buffer qualifies when ``body`` stores to it exactly once, that store is a
    statement of a sequence whose later statements hold every load of it (so the
    store runs first, in the same iteration of every enclosing loop), the stored
    value reads no memory and calls nothing (its Vars cannot change in between),
    and no call takes the buffer itself.

    Returns:
        buffer -> the value every load of it reads.
    """
    candidates: list[tuple[Any, Any, list[Any]]] = []

    def visit_seq(seq: Any) -> None:
        stmts = list(seq.seq)
        for position, stmt in enumerate(stmts):
            if (
                isinstance(stmt, tirx.BufferStore)
                and _is_scalar(stmt.buffer)
                and not _reads_memory(stmt.value)
            ):
                candidates.append((stmt.buffer, stmt.value, stmts[position + 1 :]))

    tvm_ffi.structural_walk(body, (tirx.SeqStmt, visit_seq), order="pre")
    values: dict[Any, Any] = {}
    for buffer, value, later in candidates:
        loads, stores = _accesses_of(body, buffer)
        later_loads = sum(_accesses_of(stmt, buffer)[0] for stmt in later)
        if stores == 1 and loads == later_loads and not _bare_uses(body, buffer):
            values[buffer] = value
    return values


def inline_index_values(
    expr: Any, ranges: Sequence[tuple[Any, Any]], scalars: Mapping[Any, Any]
) -> Any:
    """``expr`` with the let-bound Vars of ``ranges`` and the loads of ``scalars``
    replaced by their values (repeatedly: a value may name earlier ones)."""

    def forward(load: Any) -> Any:
        for buffer, value in scalars.items():
            if load.source.same_as(buffer):
                return value
        return load

    lets: dict[Any, Any] = {}
    for var, bound in ranges:  # outer first: a let's value may use earlier lets
        if not isinstance(bound, tvm.ir.Range):
            lets[var] = substitute_vars(bound, lets)
    for _ in range(len(scalars) + 1):
        previous = expr
        if scalars:
            expr = tvm_ffi.structural_map(expr, (tvm.ir.TensorLoad, forward), order="post")
        expr = substitute_vars(expr, lets)
        if tvm_ffi.structural_equal(previous, expr):
            break
    return expr
