"""TileLang's reducers: ``T.alloc_reducer``, ``T.reducer_init``, ``T.reducer_update``,
``T.finalize_reducer(acc, dst)``.

A reducer is a block-shared accumulator that every contribution combines into
atomically, so it gives the reduction whatever way a target spreads the
``T.Parallel`` iterations that contribute: ``reducer_init`` fills it with the
combine's identity (or the given start), ``reducer_update(acc[i], v)`` is an atomic
``add``/``max``/``min`` of ``v`` into ``acc[i]``, and ``finalize_reducer(acc, dst)``
copies the result into ``dst``. Bitwise combines and TileLang's legacy in-place form
(``replication=``, ``finalize_reducer(acc)``) raise `UnsupportedError`.
"""

from __future__ import annotations

from typing import Any

import tvm
from tvm.script import tirx as _tvm_T

from tl_ir import ops as _ops
from tl_ir.errors import KernelTypeError, UnsupportedError
from tl_ir.frontend import current_state as _current_state
from tl_ir.language._alloc import alloc_shared
from tl_ir.language._tile_ops import atomic_add, atomic_max, atomic_min, copy, fill

__all__ = ["alloc_reducer", "finalize_reducer", "reducer_init", "reducer_update"]

_COMBINES = {"sum": atomic_add, "max": atomic_max, "min": atomic_min}


def _op_of(buffer: Any, where: str) -> str:
    state = _current_state()
    for known, op in (state.reducers if state is not None else {}).items():
        if known.same_as(buffer):
            return op
    raise KernelTypeError(f"{where}: expected a reducer made by T.alloc_reducer, got {buffer!r}")


def alloc_reducer(shape: Any, dtype: Any, op: str = "sum", replication: Any = None) -> Any:
    """A reducer of ``shape`` combining with ``op`` (``sum``, ``max`` or ``min``)."""
    if replication is not None:
        raise UnsupportedError(
            "T.alloc_reducer(replication=...): TileLang's legacy in-place reducer is not "
            "supported; use T.reducer_init / T.reducer_update / T.finalize_reducer(acc, dst)"
        )
    if op not in _COMBINES:
        raise UnsupportedError(
            f"T.alloc_reducer(op={op!r}): supported combines are {', '.join(_COMBINES)}"
        )
    buffer = alloc_shared(shape, dtype)
    state = _current_state()
    assert state is not None  # alloc_shared checked the kernel scope
    state.reducers[buffer] = op
    return buffer


def reducer_init(reducer: Any, init: Any = None) -> None:
    """Start the reduction from the combine's identity, or from ``init``."""
    op = _op_of(reducer, "T.reducer_init(reducer)")
    dtype = str(reducer.ty.dtype)
    if init is None:
        init = {"sum": 0, "max": _tvm_T.min_value(dtype), "min": _tvm_T.max_value(dtype)}[op]
    fill(reducer, init)


def reducer_update(target: Any, value: Any) -> None:
    """Combine ``value`` into the reducer element ``target`` (``acc[i, ...]``)."""
    if not isinstance(target, tvm.ir.TensorLoad):
        raise KernelTypeError(
            f"T.reducer_update(target, value): expected acc[indices], got {target!r}"
        )
    op = _op_of(target.source, "T.reducer_update(target, value)")
    _COMBINES[op](target, value)


def finalize_reducer(
    reducer: Any, dst: Any = None, batch: int = 1, annotations: Any = None
) -> None:
    """Write the reduction's result into ``dst`` (same shape as the reducer)."""
    _op_of(reducer, "T.finalize_reducer(reducer, dst)")
    if dst is None:
        raise UnsupportedError(
            "T.finalize_reducer(reducer) without dst is TileLang's legacy in-place form, "
            "not supported; pass the destination: T.finalize_reducer(acc, dst)"
        )
    if not _ops.is_buffer(dst):
        raise KernelTypeError(f"T.finalize_reducer(reducer, dst): expected a buffer, got {dst!r}")
    copy(reducer, dst)
