"""``T.Persistent``: a persistent-kernel loop over a tile domain.

``for bx, by in T.Persistent([MB, NB], wave_size, index, group_size=8):`` visits every
tile of the domain exactly once across ``wave_size`` workers, worker ``index`` taking
tiles ``index, index + wave_size, ...`` of a grouped order (the last dim is split in
groups of ``group_size`` tiles, as TileLang orders them for L2 reuse).

IR: the parser sees a ``T.grid(waves, 1, ...)`` whose loop Vars are the tile
coordinates; `rewrite_persistent_loops` then turns it into one serial loop over the
waves whose body computes the coordinates and skips the padding of the last wave.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx
from tvm.script import tirx as _tvm_T
from tvm.script.ir_builder import tirx as _IB

from tl_ir import ops as _ops
from tl_ir.errors import KernelTypeError, KernelValueError, ScopeError
from tl_ir.frontend import current_state as _current_state
from tl_ir.language._extras import ceildiv
from tl_ir.launch import LOOP_KIND_KEY

__all__ = ["Persistent", "PersistentLoop"]


@dataclass(frozen=True)
class PersistentLoop:
    """What `T.Persistent` was asked for, keyed in the parse state by its first Var."""

    coords: tuple[Any, ...]
    domain: tuple[Any, ...]
    wave_size: Any
    index: Any
    group_size: Any


def _as_int32(value: Any) -> Any:
    value = _ops.exact_int(value)
    return tirx.IntImm("int32", value) if isinstance(value, int) else value


def Persistent(domain: Any, wave_size: Any, index: Any, group_size: Any = 8) -> Any:
    """``for *coords in T.Persistent(domain, wave_size, index, group_size=8)``.

    Raises:
        KernelTypeError: an empty domain or non-integer arguments.
        KernelValueError: a constant ``wave_size`` or ``group_size`` below 1.
        ScopeError: outside a ``@T.prim_func`` body.
    """
    state = _current_state()
    if state is None:
        raise ScopeError("T.Persistent is only allowed inside a @T.prim_func body")
    dims = tuple(domain) if isinstance(domain, list | tuple) else ()
    if not dims:
        raise KernelTypeError(
            f"T.Persistent(domain, ...): expected a non-empty list, got {domain!r}"
        )
    wave_size, index, group_size = (_ops.exact_int(v) for v in (wave_size, index, group_size))
    for name, value in (("wave_size", wave_size), ("index", index), ("group_size", group_size)):
        if isinstance(value, bool) or not (isinstance(value, int) or tvm.ir.is_prim_expr(value)):
            raise KernelTypeError(f"T.Persistent({name}=...): expected an integer, got {value!r}")
    for name, value, meaning in (
        ("wave_size", wave_size, "the number of workers"),
        ("group_size", group_size, "tiles of the last dim per group"),
    ):
        constant = _ops.const_int(value)
        if constant is not None and constant < 1:
            # wave_size 0 failed as "T.ceildiv(a, b): expected b to be non-zero"; a
            # group_size below 1 was quietly taken as 1 (TileLang clamps it).
            raise KernelValueError(
                f"T.Persistent({name}=...): expected a positive int ({meaning}), got {constant}"
            )
    dims = tuple(_as_int32(d) for d in dims)
    last = dims[-1]
    group = _tvm_T.max(_tvm_T.min(_as_int32(group_size), last), 1)
    grouped = (ceildiv(last, group), *dims[:-1], group)
    padded: Any = grouped[0]
    for extent in grouped[1:]:
        padded = padded * extent
    waves = ceildiv(padded, _as_int32(wave_size))
    frame = _IB.grid(waves, *([1] * (len(dims) - 1)))
    coords = tuple(frame.vars)
    state.persistent[coords[0]] = PersistentLoop(
        coords, dims, _as_int32(wave_size), _as_int32(index), group
    )
    return frame


def _coordinates(loop: PersistentLoop, wave: Any) -> tuple[list[Any], Any, Any]:
    dims = loop.domain
    grouped = [ceildiv(dims[-1], loop.group_size), *dims[:-1], loop.group_size]
    linear = wave * loop.wave_size + loop.index
    padded: Any = grouped[0]
    for extent in grouped[1:]:
        padded = padded * extent
    rest = linear
    idxs: list[Any] = [None] * len(grouped)
    for i in range(len(grouped) - 1, 0, -1):
        idxs[i] = tirx.floormod(rest, grouped[i])  # rest >= 0: same as truncmod
        rest = tirx.floordiv(rest, grouped[i])
    idxs[0] = rest
    last = idxs[0] * loop.group_size + idxs[-1]
    coords = [idxs[i + 1] for i in range(len(dims) - 1)] + [last]
    in_range = tirx.And(linear < padded, last < dims[-1])
    return coords, in_range, linear


def rewrite_persistent_loops(body: Any, loops: dict[Any, PersistentLoop]) -> Any:
    """Turn each `T.Persistent` grid of ``body`` into its serial loop over waves."""

    def rewrite(loop: Any) -> Any:
        spec = loops.get(loop.loop_var)
        if spec is None:
            return loop
        inner = loop.body
        for _ in spec.coords[1:]:
            inner = inner.body  # the unit loops of the coordinates after the first
        wave = tirx.Var("wave", "int32")
        coords, in_range, _ = _coordinates(spec, wave)
        mapping = dict(zip(spec.coords, coords, strict=True))
        inner = tvm_ffi.structural_map(
            inner, (tvm.ir.Var, lambda var: mapping.get(var, var)), order="post"
        )
        return tirx.For(
            wave,
            loop.min,
            loop.extent,
            tirx.ForKind.SERIAL,
            tirx.IfThenElse(in_range, inner, None),
            None,
            {LOOP_KIND_KEY: "serial"},
            None,
            loop.span,
        )

    return tvm_ffi.structural_map(body, (tirx.For, rewrite), order="post")
