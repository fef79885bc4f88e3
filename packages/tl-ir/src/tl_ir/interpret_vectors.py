"""Vector values of the reference interpreter (`tl_ir.interpret`): ``T.Ramp``,
``T.Broadcast``, ``T.Shuffle`` and loads through them hold one scalar per lane, and
every operation on them is the scalar operation lane by lane (a scalar operand is
broadcast). A vector store reads all its lanes before it writes any."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tl_ir.interpret_scalars import wrap

__all__ = ["Vector", "broadcast", "element_places", "lanes_of", "lanewise", "ramp", "shuffle"]


class Vector(tuple[Any, ...]):
    """The lanes of a vector value, in order (each a scalar value)."""

    __slots__ = ()


def lanes_of(*values: Any) -> int | None:
    """The lane count of the vectors among ``values`` (None when all are scalars).

    Raises:
        ValueError: vectors of different lane counts.
    """
    counts = {len(v) for v in values if isinstance(v, Vector)}
    if len(counts) > 1:
        raise ValueError(f"interpret: vectors of different lane counts {sorted(counts)}")
    return counts.pop() if counts else None


def lanewise(operation: Callable[..., Any], *values: Any) -> Any:
    """``operation(*values)`` for scalars; for vectors, a `Vector` of ``operation`` on
    each lane (scalar operands broadcast to every lane)."""
    if not any(isinstance(v, Vector) for v in values):  # the common, scalar case
        return operation(*values)
    lanes = lanes_of(*values) or 0
    columns = [v if isinstance(v, Vector) else (v,) * lanes for v in values]
    return Vector(operation(*lane) for lane in zip(*columns, strict=True))


def ramp(base: Any, stride: Any, lanes: int, dtype: str) -> Vector:
    """``T.Ramp(base, stride, lanes)``: ``base + i * stride`` for each lane ``i``, wrapped
    to the element dtype ``dtype``."""
    return Vector(wrap(base + i * stride, dtype) for i in range(lanes))


def broadcast(value: Any, lanes: int) -> Vector:
    """``T.Broadcast(value, lanes)``: ``value`` in every lane."""
    return Vector((value,) * lanes)


def shuffle(vectors: Sequence[Any], indices: Sequence[int]) -> Any:
    """``T.Shuffle(vectors, indices)``: the lanes of ``vectors`` concatenated, picked by
    ``indices`` (one index: that scalar)."""
    flat: list[Any] = []
    for vector in vectors:
        flat.extend(vector if isinstance(vector, Vector) else (vector,))
    picked = [flat[i] for i in indices]
    return picked[0] if len(picked) == 1 else Vector(picked)


def element_places(
    name: str, shape: Sequence[int], indices: Sequence[Any], where: Callable[[], str]
) -> tuple[int, ...] | list[tuple[int, ...]]:
    """The element index given by the index values ``indices`` of buffer ``name`` (of
    ``shape``); when some are vectors, the list of every lane's index. All checked
    before any is returned (a store writes no lane when one is out of bounds).

    Raises:
        IndexError: an index outside ``[0, extent)`` (names the buffer, the index, the
            extent and ``where()``, the kernel's file:line).
    """
    if not any(isinstance(v, Vector) for v in indices):
        return _checked(name, shape, tuple(int(v) for v in indices), where)
    lanes = lanes_of(*indices) or 0
    columns = [v if isinstance(v, Vector) else (v,) * lanes for v in indices]
    return [
        _checked(name, shape, tuple(int(v) for v in lane), where)
        for lane in zip(*columns, strict=True)
    ]


def _checked(
    name: str, shape: Sequence[int], index: tuple[int, ...], where: Callable[[], str]
) -> tuple[int, ...]:
    for dim, (position, extent) in enumerate(zip(index, shape, strict=False)):
        if not 0 <= position < extent:
            raise IndexError(
                f"interpret: index {position} is out of bounds for buffer "
                f"{name!r} (dim {dim}, extent {extent}) at {where()}"
            )
    return index
