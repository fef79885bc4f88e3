"""Tile values for `cpu-forward-copies`: a block-local tile's contents as expressions.

A `TileValue` gives every element of a tile as an expression of placeholder
indices over a *domain* (the shape the value was produced in: the tile's own
shape, or the loop nest that stored it). Tiles share one row-major element
order, so a value produced over one shape is read over another (a
``T.reshape`` view, a flat ``B[i * N + j]`` store read back as ``B[k]``) by
mapping flat offsets (`reshaped`); the simplifier removes the ``//`` and ``%``
wherever the two shapes line up.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir.ops import Region
from tl_passes.buffer_rewrite import substitute_vars


def same(a: Any, b: Any) -> bool:
    """Structural equality of two IR nodes."""
    return bool(tvm_ffi.structural_equal(a, b))


def convert(value: Any, dtype: str) -> Any:
    """``value`` cast to ``dtype`` (itself when it has that dtype already)."""
    return value if str(value.ty.dtype) == dtype else tirx.Cast(dtype, value)


def placeholders(rank: int, prefix: str = "p") -> list[tirx.Var]:
    """Fresh int32 index variables ``prefix0 .. prefix{rank-1}``."""
    return [tirx.Var(f"{prefix}{d}", "int32") for d in range(rank)]


def row_major(indices: Sequence[Any], shape: Sequence[int]) -> Any:
    """The flat row-major offset of ``indices`` in a tile of ``shape``."""
    flat: Any = tirx.const(0, "int32")
    for index, size in zip(indices, shape, strict=True):
        flat = flat * size + index
    return flat


def bounded_analyzer(variables: Sequence[Any], extents: Sequence[int]) -> Any:
    """A simplifier that knows ``0 <= variables[d] < extents[d]``."""
    analyzer = tvm.sym.Analyzer()
    for var, extent in zip(variables, extents, strict=True):
        analyzer.bind(var, tvm.ir.Range(0, extent))
    return analyzer


def unravel(flat: Any, shape: Sequence[int], analyzer: Any) -> list[Any]:
    """The indices of flat offset ``flat`` in a tile of ``shape`` (simplified)."""
    indices: list[Any] = []
    stride = 1
    for size in reversed(shape):
        indices.append(analyzer.simplify(tirx.floormod(tirx.floordiv(flat, stride), size)))
        stride *= size
    return list(reversed(indices))


@dataclass
class TileValue:
    """A local tile's contents as expressions of placeholder indices ``index``.

    ``extents`` is the domain of ``index`` (row-major like the tile). ``full``
    assumes every source tile lies inside its buffer; ``partial`` reads 0 outside
    (a select per source not placed like the destination is added when it is
    evaluated; a destination of None always selects). ``sources`` are the
    non-local regions read through copies.
    """

    index: list[tirx.Var]
    extents: tuple[int, ...]
    full: Any
    partial: Callable[[Region | None], Any]
    sources: list[Region] = field(default_factory=list)

    def at(self, index: Sequence[Any], destination: Region | None) -> tuple[Any, Any]:
        """``(full, partial)`` at ``index`` (of `extents`); ``destination``: the region
        the element goes to when ``index`` is also its position there, else None."""
        mapping = dict(zip(self.index, index, strict=True))
        return (
            substitute_vars(self.full, mapping),
            substitute_vars(self.partial(destination), mapping),
        )


def reshaped(value: TileValue, shape: tuple[int, ...]) -> TileValue:
    """``value`` over the domain ``shape`` (same number of elements, row-major order).

    Positions no longer match the producer's, so the result's ``partial`` always
    guards its sources (it ignores the destination).
    """
    if tuple(value.extents) == tuple(shape):
        return value
    index = placeholders(len(shape), "q")
    analyzer = bounded_analyzer(index, shape)
    old = unravel(row_major(index, shape), value.extents, analyzer)
    mapping = dict(zip(value.index, old, strict=True))
    before = value.partial

    def partial(destination: Region | None) -> Any:
        return substitute_vars(before(None), mapping)

    return TileValue(
        index, tuple(shape), substitute_vars(value.full, mapping), partial, value.sources
    )


def placed_alike(source: Region, destination: Region | None) -> bool:
    """Whether ``source``'s tile lies exactly where ``destination``'s does in a buffer of
    the same shape (so the destination's clipping keeps the source inside its buffer)."""
    if destination is None or source.rank != destination.rank:
        return False
    return all(same(a, b) for a, b in zip(source.mins, destination.mins, strict=True)) and all(
        same(a, b) for a, b in zip(source.buffer.ty.shape, destination.buffer.ty.shape, strict=True)
    )


def copy_value(source: Region, extents: tuple[int, ...], dtype: str) -> TileValue:
    """The value of a tile of ``extents`` after ``T.copy(source, tile)`` (0 outside the
    source's buffer, as ``T.copy`` pads)."""
    index = placeholders(len(extents))
    element = [m + p for m, p in zip(source.mins, index, strict=True)]
    load = convert(tirx.BufferLoad(source.buffer, element), dtype)

    def partial(destination: Region | None) -> Any:
        if placed_alike(source, destination):
            return load
        inside = [
            tirx.all(e >= 0, e < size)
            for e, size in zip(element, source.buffer.ty.shape, strict=True)
        ]
        return tirx.if_then_else(tirx.all(*inside), load, tirx.const(0, dtype))

    return TileValue(index, tuple(extents), load, partial, [source])
