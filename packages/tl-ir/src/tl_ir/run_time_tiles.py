"""Tile copies, fills, tile atomics and scans whose extent is a run-time value with a
compile-time bound.

TileLang programs copy a run-time number of rows:
``T.copy(KV[kv_start:kv_end, :], KV_shared)`` where ``kv_end - kv_start`` is known
only when the kernel runs and is at most the shared tile's ``block_N`` rows, or
``T.copy(A[s:e, :], B[s:e, :])`` between two global tensors with
``e = T.min(s + block, n)``, or fill part of a tile, ``T.fill(S[0:n, :], 0)``. The
backends need tile-op extents that are integers, so after parsing (and after
`tl_ir.region_extents` has made every provably constant extent an integer) each
``T.copy`` / ``T.fill`` / ``T.clear`` / tile ``T.atomic_*`` with a run-time extent
becomes an element-parallel loop over a compile-time bound of the extent, guarded by
the run-time one (a tile atomic: a loop of element atomics, skipping elements outside
either buffer):

    for i, j in T.Parallel(block_N, D):      # the bound of each extent
        if i < kv_end - kv_start:             # the run-time extent
            KV_shared[i, j] = KV[kv_start + i, j]

The bound of a dim is the smallest of: the other tile's constant extent (a copy),
the bound TVM's analyzer proves for a run-time extent (`tl_ir.upper_bounds`: through
``T.min``, let bindings and scalars assigned once), and the destination buffer's
constant size less the lowest first index the analyzer proves (``S[0:n, :]`` of a
``block_N``-row tile: ``block_N``). A dim with none of them is left to the target,
which refuses it with what to write instead.

It keeps the tile ops' meaning: a copy copies as many elements as the smaller of
its two extents (a run-time extent larger than the other tile's constant extent is
cut at it), elements of the source tile outside the source buffer read as zero,
elements outside the destination buffer are not written, and the rest of the
destination is left as it was. Every target lowers it like any ``T.Parallel`` loop.

A ``T.cumsum`` / ``T.cummax`` over a run-time region (``T.cumsum(S[0:n, :], dim=0)``)
cannot be such a loop: each element depends on the ones before it. It becomes a scan
of a scratch tile sized by the bounds (block-shared, so each target scans it as it
scans any shared tile): the tile is filled with the scan's identity, the region's
elements are copied in by a guarded loop as above, the whole tile is scanned (constant
extents, no guard around it: a GPU scan has barriers, which cannot sit under a
condition), and the region's elements are copied back out. The identity after the
region (before it, ``reverse=True``) leaves the region's scan as it was; elements of
the destination outside the region are left as they were.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tvm_ffi
from tvm import tirx

from tl_ir import ops as _ops
from tl_ir import scopes
from tl_ir.errors import UnsupportedError
from tl_ir.launch import LOOP_KIND_KEY
from tl_ir.upper_bounds import UpperBounds

__all__ = ["expand_run_time_tiles", "run_time_extent_error"]

#: The tile ops this module expands when their run-time extents have a bound.
_EXPANDED = ("T.copy", "T.fill", "T.clear", "T.atomic", "T.cum")


def run_time_extent_error(what: str | None, buffer_name: str, extent: Any) -> UnsupportedError:
    """The error a target raises for a tile op ``what`` (``"T.copy"``, ``"T.reduce"``...;
    None when the target does not know which) whose tile ``buffer_name`` still has the
    run-time extent ``extent`` (none of the bounds this module looks for exists),
    saying what to write instead."""
    bound = (
        "bound it: slice with T.min (A[s : s + T.min(n, MAX)], or e = T.min(s + MAX, n) "
        "then A[s:e]), or copy into or out of a tile of fixed size"
    )
    whole = (
        "T.fill a tile of fixed size with the operation's identity, T.copy the run-time "
        "rows into it (a bounded run-time copy) and apply the operation to the whole tile"
    )
    if what is None:
        what = "tile op"
        advice = (
            f"for T.copy, T.fill, T.clear, tile T.atomic_* and T.cumsum/T.cummax {bound}; "
            f"T.reduce_* and T.gemm need constant extents: {whole}"
        )
    elif what.startswith(_EXPANDED):
        advice = bound
    else:
        advice = f"{what} needs constant extents here: {whole}"
    return UnsupportedError(
        f"{what}: tile {buffer_name} has a symbolic extent {extent} with no compile-time "
        f"upper bound; {advice}; or write the operation as a T.Parallel loop over a bound, "
        "T.Parallel(T.min(n, MAX))"
    )


@dataclass(frozen=True)
class _Axis:
    """One loop of an expanded tile op: the dims it walks in each operand, its
    compile-time trip count and the run-time extents guarding it, each with the first
    index of its region along the dim (``(start, extent)``)."""

    dims: tuple[int, ...]
    bound: int
    guards: tuple[tuple[Any, Any], ...]


def _non_unit_dims(region: _ops.Region) -> list[int]:
    return [d for d, e in enumerate(region.extents) if _ops.const_int(e) != 1]


def _inside(buffer: Any, index: list[Any]) -> Any:
    conditions = [
        tirx.all(i >= 0, i < extent) for i, extent in zip(index, buffer.ty.shape, strict=True)
    ]
    return tirx.all(*conditions) if len(conditions) > 1 else conditions[0]


def _zero(dtype: str) -> Any:
    return tirx.const(False if dtype == "bool" else 0, dtype)


def _converted(value: Any, dtype: str) -> Any:
    if isinstance(value, bool | int | float):
        return tirx.const(value, dtype)
    return value if str(value.ty.dtype) == dtype else tirx.Cast(dtype, value)


class _Bounds:
    """Compile-time bounds of the run-time extents of one kernel (analysed once, when
    the first run-time extent is met)."""

    def __init__(self, body: Any) -> None:
        self._body = body
        self._upper: UpperBounds | None = None

    @property
    def upper(self) -> UpperBounds:
        if self._upper is None:  # analysed once per kernel, only when needed
            self._upper = UpperBounds(self._body)
        return self._upper

    def destination_room(self, region: _ops.Region, dim: int) -> int | None:
        """How many elements fit in ``region.buffer`` from the region's first index
        along ``dim``: the constant size less the lowest first index proven."""
        size = _ops.const_int(region.buffer.ty.shape[dim])
        if size is None:
            return None
        lowest = self.upper.lowest(region.mins[dim])
        return None if lowest is None else max(size - max(lowest, 0), 0)

    def bound(self, candidates: list[int | None]) -> int | None:
        known = [c for c in candidates if c is not None]
        return max(min(known), 1) if known else None


def _pair_axis(
    src: _ops.Region, s_dim: int, dst: _ops.Region, d_dim: int, bounds: _Bounds
) -> _Axis | None:
    """The loop walking ``src``'s dim ``s_dim`` with ``dst``'s dim ``d_dim``, or None when
    the two constant extents differ or a run-time one has no bound."""
    s_ext, d_ext = src.extents[s_dim], dst.extents[d_dim]
    s_const, d_const = _ops.const_int(s_ext), _ops.const_int(d_ext)
    if s_const is not None and d_const is not None:
        return _Axis((s_dim, d_dim), s_const, ()) if s_const == d_const else None
    guards = tuple(
        (region.mins[dim], e)
        for region, dim, e, c in ((src, s_dim, s_ext, s_const), (dst, d_dim, d_ext, d_const))
        if c is None
    )
    if len(guards) == 2 and tvm_ffi.structural_equal(guards[0], guards[1]):
        guards = guards[:1]  # T.copy(A[s:e, :], B[s:e, :]): one guard
    candidates = [s_const, d_const, *(bounds.upper.of(e) for _, e in guards)]
    if d_const is None:
        candidates.append(bounds.destination_room(dst, d_dim))
    bound = bounds.bound(candidates)
    return None if bound is None else _Axis((s_dim, d_dim), bound, guards)


def _paired_axes(src: _ops.Region, dst: _ops.Region, bounds: _Bounds) -> list[_Axis] | None:
    """The loops of an expanded copy (or tile atomic) from ``src`` to ``dst``, or None
    when it needs no expansion (every extent constant) or cannot be expanded (the
    target reports it)."""
    s_dims, d_dims = _non_unit_dims(src), _non_unit_dims(dst)
    if len(s_dims) != len(d_dims):
        return None
    axes = [_pair_axis(src, s, dst, d, bounds) for s, d in zip(s_dims, d_dims, strict=True)]
    if any(axis is None for axis in axes) or all(not axis.guards for axis in axes if axis):
        return None
    return [axis for axis in axes if axis is not None]


def _tile_axes(dst: _ops.Region, bounds: _Bounds) -> list[_Axis] | None:
    """The loops over every non-unit dim of ``dst`` (constant or bounded run-time
    extents), or None when a run-time extent has no bound."""
    axes: list[_Axis] = []
    for dim in _non_unit_dims(dst):
        extent = dst.extents[dim]
        constant = _ops.const_int(extent)
        if constant is not None:
            axes.append(_Axis((dim,), constant, ()))
            continue
        bound = bounds.bound([bounds.upper.of(extent), bounds.destination_room(dst, dim)])
        if bound is None:
            return None
        axes.append(_Axis((dim,), bound, ((dst.mins[dim], extent),)))
    return axes


def _fill_axes(fill: _ops.FillOp, bounds: _Bounds) -> list[_Axis] | None:
    """The loops of an expanded fill (as `_paired_axes`): None also when every extent
    is a constant (no expansion needed)."""
    axes = _tile_axes(fill.dst, bounds)
    if axes is None or all(not axis.guards for axis in axes):
        return None
    return axes


def _loop_nest(axes: list[_Axis], body_of: Any) -> Any:
    """Parallel loops over ``axes`` (outermost first) around ``body_of(loop_vars)``."""
    ivs = [tirx.Var(f"tile_i{k}", "int32") for k in range(len(axes))]
    body = body_of(ivs)
    annotations = {LOOP_KIND_KEY: "parallel"}
    for iv, axis in reversed(list(zip(ivs, axes, strict=True))):
        body = tirx.For(
            iv,
            tirx.IntImm("int32", 0),
            tirx.IntImm("int32", axis.bound),
            tirx.ForKind.SERIAL,
            body,
            None,
            annotations,
        )
    return body


def _guard(iv: Any, start: Any, extent: Any) -> Any:
    """``iv`` is below the run-time ``extent`` of a region starting at ``start``.

    A slice ``A[s:e]`` has the extent ``e - s``, which wraps around in int32 when ``e`` is
    far below ``s`` (``e = T.min(s + 16, n)`` with ``n = -2**31``: ``e - s`` is large and
    positive, and every row would be copied instead of none); ``s + iv < e`` compares the
    element's own index with the slice's end instead, which means the same and does not
    wrap.
    """
    if isinstance(extent, tirx.Sub) and tvm_ffi.structural_equal(extent.b, start):
        return start + iv < extent.a
    return iv < extent


def _guards(ivs: list[Any], axes: list[_Axis]) -> list[Any]:
    return [
        _guard(iv, start, extent)
        for iv, axis in zip(ivs, axes, strict=True)
        for start, extent in axis.guards
    ]


def _expand_copy(copy: _ops.CopyOp, axes: list[_Axis]) -> Any:
    src, dst = copy.src, copy.dst

    def body(ivs: list[Any]) -> Any:
        s_index, d_index = list(src.mins), list(dst.mins)
        for iv, axis in zip(ivs, axes, strict=True):
            s_dim, d_dim = axis.dims
            s_index[s_dim] = s_index[s_dim] + iv
            d_index[d_dim] = d_index[d_dim] + iv
        load = _converted(tirx.BufferLoad(src.buffer, s_index), dst.dtype)
        value = tirx.if_then_else(_inside(src.buffer, s_index), load, _zero(dst.dtype))
        store = tirx.BufferStore(dst.buffer, value, d_index)
        condition = tirx.all(*_guards(ivs, axes), _inside(dst.buffer, d_index))
        return tirx.IfThenElse(condition, store, None)

    return _loop_nest(axes, body)


def _expand_fill(fill: _ops.FillOp, axes: list[_Axis]) -> Any:
    dst = fill.dst

    def body(ivs: list[Any]) -> Any:
        index = list(dst.mins)
        for iv, axis in zip(ivs, axes, strict=True):
            (dim,) = axis.dims
            index[dim] = index[dim] + iv
        store = tirx.BufferStore(dst.buffer, _converted(fill.value, dst.dtype), index)
        condition = tirx.all(*_guards(ivs, axes), _inside(dst.buffer, index))
        return tirx.IfThenElse(condition, store, None)

    return _loop_nest(axes, body)


def _expand_atomic(atomic: _ops.AtomicOp, value: _ops.Region, axes: list[_Axis]) -> Any:
    dst = atomic.dst

    def body(ivs: list[Any]) -> Any:
        v_index, d_index = list(value.mins), list(dst.mins)
        for iv, axis in zip(ivs, axes, strict=True):
            v_dim, d_dim = axis.dims
            v_index[v_dim] = v_index[v_dim] + iv
            d_index[d_dim] = d_index[d_dim] + iv
        one = tirx.IntImm("int32", 1)
        element = _ops.Region(dst.buffer, tuple(d_index), (one,) * dst.rank, dst.access)
        load = _converted(tirx.BufferLoad(value.buffer, v_index), dst.dtype)
        update = tirx.Evaluate(_ops.make_call(f"tl.atomic_{atomic.kind}", element, load))
        inside = (_inside(value.buffer, v_index), _inside(dst.buffer, d_index))
        return tirx.IfThenElse(tirx.all(*_guards(ivs, axes), *inside), update, None)

    return _loop_nest(axes, body)


def _expand_scalar_atomic(atomic: _ops.AtomicOp, bounds: _Bounds) -> Any:
    """``T.atomic_<kind>(A[tile], v)`` (a scalar onto a tile): each element of the tile
    updated once, as a guarded ``T.Parallel`` loop of element atomics (every target
    runs one element atomic per element of such a loop)."""
    dst = atomic.dst
    axes = _tile_axes(dst, bounds)
    if axes is None:
        dim = next(d for d in _non_unit_dims(dst) if _ops.const_int(dst.extents[d]) is None)
        raise run_time_extent_error(f"T.atomic_{atomic.kind}", dst.buffer.name, dst.extents[dim])

    def body(ivs: list[Any]) -> Any:
        index = list(dst.mins)
        for iv, axis in zip(ivs, axes, strict=True):
            (dim,) = axis.dims
            index[dim] = index[dim] + iv
        one = tirx.IntImm("int32", 1)
        element = _ops.Region(dst.buffer, tuple(index), (one,) * dst.rank, dst.access)
        value = _converted(atomic.value, dst.dtype)
        update = tirx.Evaluate(_ops.make_call(f"tl.atomic_{atomic.kind}", element, value))
        return tirx.IfThenElse(
            tirx.all(*_guards(ivs, axes), _inside(dst.buffer, index)), update, None
        )

    return _loop_nest(axes, body)


def _scan_axes(scan: _ops.CumsumOp, bounds: _Bounds) -> list[_Axis] | None:
    """One axis per dim of a scan's regions (unit dims included, so the scan's ``dim``
    names the same dim of the scratch tile), or None when it needs no expansion or
    cannot be expanded (the target reports it)."""
    src, dst = scan.src, scan.dst
    if src.rank != dst.rank:
        return None
    axes = [_pair_axis(src, d, dst, d, bounds) for d in range(src.rank)]
    if any(axis is None for axis in axes) or all(not axis.guards for axis in axes if axis):
        return None
    return [axis for axis in axes if axis is not None]


def _expand_scan(scan: _ops.CumsumOp, axes: list[_Axis]) -> Any:
    """A scan over a bounded run-time region as scan of a fixed-size scratch tile (one
    element per bound): fill the tile with the scan's identity, copy the valid
    elements in, scan the whole tile, copy the valid elements out. The identity after
    (before, ``reverse``) the valid elements leaves their scan unchanged, and the scan
    itself has constant extents, so every target lowers it as it lowers any scan."""
    src, dst = scan.src, scan.dst
    shape = [axis.bound for axis in axes]
    scratch = tirx.decl_buffer(shape, src.dtype, name="scan_tile", scope=scopes.SHARED_DYN)
    zero = tirx.IntImm("int32", 0)
    whole = tuple(tirx.IntImm("int32", n) for n in shape)
    origin = (zero,) * len(shape)
    identity, _combine = _ops.scan_parts(scan.kind, src.dtype)
    walked = [axis for axis in axes if axis.guards or axis.bound != 1]
    into = _ops.Region(scratch, origin, src.extents, _ops.ACCESS_WRITE)
    out_of = _ops.Region(scratch, origin, dst.extents, _ops.ACCESS_READ)
    whole_read = _ops.Region(scratch, origin, whole, _ops.ACCESS_READ)
    whole_write = _ops.Region(scratch, origin, whole, _ops.ACCESS_WRITE)
    return tirx.SeqStmt(
        [
            tirx.AllocBuffer(scratch),
            tirx.Evaluate(_ops.encode(_ops.FillOp(whole_write, identity))),
            _expand_copy(_ops.CopyOp(src, into), walked),
            tirx.Evaluate(
                _ops.encode(
                    _ops.CumsumOp(whole_read, whole_write, scan.dim, scan.reverse, scan.kind)
                )
            ),
            _expand_copy(_ops.CopyOp(out_of, dst), walked),
        ]
    )


def expand_run_time_tiles(body: Any) -> Any:
    """``body`` with every ``T.copy``, ``T.fill`` / ``T.clear`` and tile
    ``T.atomic_add/max/min`` whose extent is a run-time value with a compile-time bound
    written as a guarded element-parallel loop (the module docstring), and every scalar
    atomic onto a tile (``T.atomic_add(A[0:32, 0:32], 1.0)``, constant or bounded
    extents) written as such a loop of element atomics; other statements unchanged.

    Raises:
        UnsupportedError: a scalar atomic onto a tile with a run-time extent that has
            no compile-time bound.
    """
    bounds = _Bounds(body)

    def rewrite(statement: Any) -> Any:
        if not _ops.is_tile_op(statement.value):
            return statement
        op = _ops.describe(statement.value)
        if isinstance(op, _ops.CopyOp):
            axes = _paired_axes(op.src, op.dst, bounds)
            return statement if axes is None else _expand_copy(op, axes)
        if isinstance(op, _ops.FillOp):
            axes = _fill_axes(op, bounds)
            return statement if axes is None else _expand_fill(op, axes)
        if isinstance(op, _ops.AtomicOp) and isinstance(op.value, _ops.Region):
            axes = _paired_axes(op.value, op.dst, bounds)
            return statement if axes is None else _expand_atomic(op, op.value, axes)
        if isinstance(op, _ops.AtomicOp) and op.prev is None and _non_unit_dims(op.dst):
            return _expand_scalar_atomic(op, bounds)
        if isinstance(op, _ops.CumsumOp):
            axes = _scan_axes(op, bounds)
            return statement if axes is None else _expand_scan(op, axes)
        return statement  # other ops, and an atomic of one element (no extent)

    return tvm_ffi.structural_map(body, (tirx.Evaluate, rewrite), order="post")
