"""TileLang's reducers: ``T.alloc_reducer``, ``T.reducer_init``, ``T.reducer_update``,
``T.finalize_reducer(acc, dst)``.

A reducer is a block-shared accumulator that every contribution combines into
atomically, so it gives the reduction whatever way a target spreads the
``T.Parallel`` iterations that contribute: ``reducer_init`` fills it with the
combine's identity (or the given start), ``reducer_update(acc[i], v)`` is an atomic
``add``/``max``/``min`` of ``v`` into ``acc[i]``, and ``finalize_reducer(acc, dst)``
copies the result into ``dst``. Bitwise combines raise `UnsupportedError`.

TileLang's legacy (v1) form is taken too, with the meaning TileLang gives it today
(it rewrites the legacy form into the one above): ``T.alloc_reducer(shape, dtype,
op, replication="all" | "none")``, opened by ``T.clear(acc)`` / ``T.fill(acc, v)``,
updated by plain read-modify-write stores ``acc[i] += v`` (``acc[i] = T.max(acc[i],
v)`` for ``max``, ``T.min`` for ``min``), closed in place by
``T.finalize_reducer(acc)``, after which ``acc`` is read as the result. Each such
store is rewritten after parsing (`rewrite_reducer_stores`) into the same atomic
update ``T.reducer_update`` makes, so every contribution is combined exactly once
however the loop is spread; ``replication`` (whether each thread held a copy in
TileLang's first lowering) no longer changes the result there, nor here. As in
TileLang, a ``sum`` reducer of the legacy form must be filled with 0 (its old
result depended on how many threads held a copy), and any other store to a
reducer is refused.
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir import ops as _ops
from tl_ir.errors import KernelTypeError, UnsupportedError
from tl_ir.frontend import current_state as _current_state
from tl_ir.language._alloc import alloc_shared
from tl_ir.language._tile_atomics import atomic_add, atomic_max, atomic_min
from tl_ir.language._tile_ops import copy, fill
from tl_ir.reduce_identity import max_identity, min_identity

__all__ = [
    "alloc_reducer",
    "finalize_reducer",
    "reducer_init",
    "reducer_update",
    "rewrite_reducer_stores",
]

_COMBINES = {"sum": atomic_add, "max": atomic_max, "min": atomic_min}
_REPLICATIONS = ("all", "none")
#: The expression node of each combine in a legacy update store ``acc[i] = f(acc[i], v)``.
_COMBINE_NODES = {"sum": tirx.Add, "max": tirx.Max, "min": tirx.Min}


def _op_of(buffer: Any, where: str) -> str:
    state = _current_state()
    for known, op in (state.reducers if state is not None else {}).items():
        if known.same_as(buffer):
            return op
    raise KernelTypeError(f"{where}: expected a reducer made by T.alloc_reducer, got {buffer!r}")


def alloc_reducer(shape: Any, dtype: Any, op: str = "sum", replication: Any = None) -> Any:
    """A reducer of ``shape`` combining with ``op`` (``sum``, ``max`` or ``min``);
    ``replication`` (``"all"`` or ``"none"``) selects TileLang's legacy form (module
    docstring).

    Raises:
        KernelTypeError: ``replication`` is neither None, ``"all"`` nor ``"none"``.
        UnsupportedError: another ``op``.
    """
    if replication is not None and replication not in _REPLICATIONS:
        raise KernelTypeError(
            f"T.alloc_reducer(replication=...): expected one of {', '.join(_REPLICATIONS)} "
            f"(TileLang's legacy reducer) or None, got {replication!r}"
        )
    if op not in _COMBINES:
        raise UnsupportedError(
            f"T.alloc_reducer(op={op!r}): supported combines are {', '.join(_COMBINES)}"
        )
    buffer = alloc_shared(shape, dtype)
    state = _current_state()
    assert state is not None  # alloc_shared checked the kernel scope
    state.reducers[buffer] = op
    if replication is not None:
        state.legacy_reducers.append(buffer)
    else:
        state.reducer_phases[buffer] = "allocated"
    return buffer


#: What each lifecycle step of a reducer (not of the legacy form) needs before it, in
#: source order: a step in another phase reads or combines an accumulator that holds
#: no reduction (TileLang refuses the same programs when it builds them).
#: A reducer ``T.clear``/``T.fill`` started (``"filled"``) follows TileLang's first
#: syntax (``+=`` updates, ``T.finalize_reducer(r)`` in place), which TileLang refuses
#: to mix with the second (``T.reducer_init``, ``T.reducer_update``, a ``dst``).
_NEEDED = {
    "init": ("allocated", "finalized"),
    "update": ("open",),
    "finalize": ("open",),
    "finalize_in_place": ("open", "filled"),
}
_AFTER = {
    "init": "open",
    "update": "open",
    "finalize": "finalized",
    "finalize_in_place": "finalized",
}
_WHY = {
    "allocated": "before T.reducer_init",
    "open": "after T.reducer_init already opened it (initialised twice)",
    "finalized": "after T.finalize_reducer closed it",
    "filled": (
        "after T.clear/T.fill started it in TileLang's first reducer syntax (T.clear, "
        "r[i] += v, T.finalize_reducer(r)), which does not mix with T.reducer_init, "
        "T.reducer_update or a finalize into dst"
    ),
}


def _advance(buffer: Any, step: str, where: str) -> None:
    state = _current_state()
    phases = state.reducer_phases if state is not None else {}
    for known, phase in phases.items():
        if known.same_as(buffer):
            if phase not in _NEEDED[step]:
                raise KernelTypeError(
                    f"{where}: reducer {buffer.name} is used {_WHY[phase]}; a reducer is "
                    "opened by T.reducer_init, updated inside T.Parallel, then closed by "
                    "T.finalize_reducer before its result is read"
                )
            phases[known] = _AFTER[step]
            return


def reducer_init(reducer: Any, init: Any = None) -> None:
    """Start the reduction from the combine's identity, or from ``init``."""
    op = _op_of(reducer, "T.reducer_init(reducer)")
    _advance(reducer, "init", "T.reducer_init(reducer)")
    dtype = str(reducer.ty.dtype)
    if init is None:
        init = {"sum": 0, "max": max_identity(dtype), "min": min_identity(dtype)}[op]
    fill(reducer, init)


def reducer_update(target: Any, value: Any) -> None:
    """Combine ``value`` into the reducer element ``target`` (``acc[i, ...]``)."""
    if not isinstance(target, tvm.ir.TensorLoad):
        raise KernelTypeError(
            f"T.reducer_update(target, value): expected acc[indices], got {target!r}"
        )
    op = _op_of(target.source, "T.reducer_update(target, value)")
    _advance(target.source, "update", "T.reducer_update(target, value)")
    _COMBINES[op](target, value)


def finalize_reducer(
    reducer: Any, dst: Any = None, batch: int = 1, annotations: Any = None
) -> None:
    """Write the reduction's result into ``dst`` (same shape as the reducer); without
    ``dst`` (TileLang's legacy in-place form) the reducer itself holds the result from
    here on (its updates are atomic: nothing is left to combine)."""
    _op_of(reducer, "T.finalize_reducer(reducer, dst)")
    step = "finalize_in_place" if dst is None else "finalize"
    _advance(reducer, step, "T.finalize_reducer(reducer, dst)")
    if dst is None:
        return
    if not _ops.is_buffer(dst):
        raise KernelTypeError(f"T.finalize_reducer(reducer, dst): expected a buffer, got {dst!r}")
    copy(reducer, dst)


def _update_value(store: Any, op: str) -> Any | None:
    """``v`` when ``store`` is ``acc[i] = combine(acc[i], v)`` (either operand order)."""
    node = store.value
    if not isinstance(node, _COMBINE_NODES[op]):
        return None
    for own, other in ((node.a, node.b), (node.b, node.a)):
        if (
            isinstance(own, tvm.ir.TensorLoad)
            and own.source.same_as(store.buffer)
            and len(own.indices) == len(store.indices)
            and all(
                tvm_ffi.structural_equal(a, b)
                for a, b in zip(own.indices, store.indices, strict=True)
            )
        ):
            return other
    return None


def _fill_of(stmt: Any, buffer: Any) -> Any | None:
    """The value of ``T.fill`` when ``stmt`` fills (part of) ``buffer``."""
    call = stmt.value
    if not isinstance(call, tvm.ir.Call) or str(getattr(call.op, "name", "")) != "tl.fill":
        return None
    region = call.args[0]
    if not region.args[0].source.same_as(buffer):
        return None
    return call.args[1]


def _is_zero(value: Any) -> bool:
    if isinstance(value, tirx.FloatImm):
        return float(value.value) == 0.0
    return _ops.const_int(value) == 0


def rewrite_reducer_stores(body: Any, reducers: dict[Any, str], legacy: list[Any]) -> Any:
    """``body`` with each legacy update store to a reducer made an atomic update (module
    docstring).

    Args:
        body: the parsed kernel body.
        reducers: every reducer buffer and its combine (``ParseState.reducers``).
        legacy: the reducers made with ``replication=`` (their fills are checked).

    Raises:
        KernelTypeError: a store to a reducer that is not ``acc[i] = combine(acc[i], v)``
            with the reducer's combine; a legacy ``sum`` reducer filled with a value
            other than 0.
    """
    refusals: list[str] = []

    def combine_of(buffer: Any) -> str | None:
        for known, op in reducers.items():
            if known.same_as(buffer):
                return op
        return None

    def rewrite_store(store: Any) -> Any:
        op = combine_of(store.buffer)
        if op is None:
            return store
        value = _update_value(store, op)
        if value is None:
            form = {"sum": "acc[i] += v", "max": "acc[i] = T.max(acc[i], v)"}.get(
                op, "acc[i] = T.min(acc[i], v)"
            )
            refusals.append(
                f"reducer {store.buffer.name} (op={op!r}) is written by a store that is not "
                f"its update {form}: {store.buffer.name}[...] = {store.value}; a reducer is "
                "only filled (T.clear / T.fill / T.reducer_init) and updated"
            )
            return store
        region = _ops.Region(
            store.buffer,
            tuple(store.indices),
            tuple(tirx.IntImm("int32", 1) for _ in store.indices),
            _ops.ACCESS_READ_WRITE,
        )
        return tirx.Evaluate(_ops.make_call(_ATOMIC_OPS[op], region, value))

    def check_fill(stmt: Any) -> Any:
        for buffer in legacy:
            value = _fill_of(stmt, buffer)
            if value is None or combine_of(buffer) != "sum" or _is_zero(value):
                continue
            shown = value.value if isinstance(value, tirx.FloatImm) else value
            refusals.append(
                f"legacy reducer {buffer.name} (op='sum') is filled with {shown}; "
                "TileLang takes only 0 there (its legacy result counted the fill once "
                "per thread): fill it with 0 and add the start value to the result"
            )
        return stmt

    rewritten = tvm_ffi.structural_map(
        body, [(tirx.BufferStore, rewrite_store), (tirx.Evaluate, check_fill)], order="post"
    )
    if refusals:
        raise KernelTypeError(refusals[0])
    return rewritten


#: The tile op each combine's update is.
_ATOMIC_OPS = {"sum": "tl.atomic_add", "max": "tl.atomic_max", "min": "tl.atomic_min"}
