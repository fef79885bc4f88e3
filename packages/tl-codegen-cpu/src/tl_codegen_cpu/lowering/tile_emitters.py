"""TIR emitters for the element-wise tile ops: copy, fill, reduce, cumsum.

Each function returns one TIR statement for one tile op on `TileRegion`s
(a buffer, the index of the tile's first element, and static extents), the
way `emit_gemm_microkernel` does for ``T.gemm``. The tile-op lowering passes
map ``tl.copy`` / ``tl.fill`` / ``tl.reduce`` / ``tl.cumsum`` calls onto them.
Elements of a partial tile that fall outside a buffer are neither read nor
written (docs/language.md); the guard is emitted only where a bound cannot be
proven statically. The innermost loop is vectorized where the op allows it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tvm import tirx

from tl_codegen_cpu.lowering.nan_rule import is_float, is_nan
from tl_ir import scopes
from tl_ir.ops import scan_parts
from tl_ir.reduce_identity import max_identity, min_identity

PrimExprLike = Any

#: The reduction kinds of ``T.reduce``.
REDUCE_KINDS: tuple[str, ...] = ("sum", "max", "min", "abssum", "absmax")


@dataclass(frozen=True)
class TileRegion:
    """A tile of a buffer: ``buffer[offset[d] : offset[d] + extents[d]]`` per dimension.

    Args:
        buffer: the TIR buffer (a ``tvm.ir.Var`` of buffer type).
        offset: one index (int or PrimExpr) per buffer dimension.
        extents: one positive int per buffer dimension.

    Raises:
        TypeError: if ``buffer`` is not a TIR buffer.
        ValueError: if ``offset`` or ``extents`` has the wrong length, or an
            extent is not a positive int.
    """

    buffer: Any
    offset: tuple[PrimExprLike, ...]
    extents: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "offset", tuple(self.offset))
        object.__setattr__(self, "extents", tuple(self.extents))
        if not tirx.is_buffer_var(self.buffer):
            raise TypeError(
                f"TileRegion buffer: expected a TIR buffer, got {type(self.buffer).__name__}"
            )
        rank = len(self.buffer.shape)
        for label, values in (("offset", self.offset), ("extents", self.extents)):
            if len(values) != rank:
                raise ValueError(
                    f"TileRegion {label}: expected {rank} entries (the rank of "
                    f"{self.buffer.name}), got {len(values)}"
                )
        for extent in self.extents:
            if not isinstance(extent, int) or isinstance(extent, bool) or extent <= 0:
                raise ValueError(
                    f"TileRegion extents: expected positive ints, got {list(self.extents)}"
                )

    @classmethod
    def whole(cls, buffer: Any) -> TileRegion:
        """The region covering all of ``buffer`` (its shape must be static).

        Raises:
            ValueError: if a dimension of ``buffer`` is not a constant.
        """
        extents = []
        for extent in buffer.shape:
            if not isinstance(extent, tirx.IntImm):
                raise ValueError(
                    f"TileRegion.whole: buffer {buffer.name} has a non-constant dimension {extent}"
                )
            extents.append(int(extent))
        return cls(buffer, (0,) * len(extents), tuple(extents))

    @property
    def squeezed_extents(self) -> tuple[int, ...]:
        """The extents without the dimensions of extent 1."""
        return tuple(e for e in self.extents if e != 1)

    def index(self, tile_index: Sequence[PrimExprLike]) -> list[Any]:
        """Buffer indices of the element at ``tile_index`` (one entry per non-unit dim)."""
        out: list[Any] = []
        position = 0
        for start, extent in zip(self.offset, self.extents, strict=True):
            if extent == 1:
                out.append(start)
            else:
                out.append(start + tile_index[position])
                position += 1
        return out

    def full_index(self, tile_index: Sequence[PrimExprLike]) -> list[Any]:
        """Buffer indices of the element at ``tile_index`` (one entry per dimension)."""
        return [start + i for start, i in zip(self.offset, tile_index, strict=True)]

    def squeeze(self, full_tile_index: Sequence[PrimExprLike]) -> list[Any]:
        """Keep the entries of a per-dimension index whose extent is not 1."""
        return [i for i, e in zip(full_tile_index, self.extents, strict=True) if e != 1]

    def inside(self, tile_index: Sequence[PrimExprLike]) -> Any | None:
        """The condition that ``tile_index`` lies inside the buffer; None when provably always."""
        conditions = []
        position = 0
        for start, extent, size in zip(self.offset, self.extents, self.buffer.shape, strict=True):
            static = isinstance(start, int | tirx.IntImm) and isinstance(size, int | tirx.IntImm)
            if static and int(start) >= 0 and int(start) + extent <= int(size):
                position += extent != 1
                continue
            element = start + tile_index[position] if extent != 1 else start
            conditions.append(tirx.all(element >= 0, element < size))
            position += extent != 1
        if not conditions:
            return None
        return conditions[0] if len(conditions) == 1 else tirx.all(*conditions)


def _both(first: Any | None, second: Any | None) -> Any | None:
    if first is None:
        return second
    if second is None:
        return first
    return tirx.all(first, second)


def _loop_nest(
    extents: Sequence[int],
    body_of: Callable[[list[Any]], tirx.Stmt],
    vectorize_last: bool,
    name: str = "i",
) -> tirx.Stmt:
    loop_vars = [tirx.Var(f"{name}{d}", "int32") for d in range(len(extents))]
    body = body_of(loop_vars)
    for depth in reversed(range(len(extents))):
        innermost = depth == len(extents) - 1
        vector = innermost and vectorize_last and extents[depth] > 1
        kind = tirx.ForKind.VECTORIZED if vector else tirx.ForKind.SERIAL
        body = tirx.For(loop_vars[depth], 0, extents[depth], kind, body)
    return body


def _guarded(store: tirx.Stmt, condition: Any | None) -> tirx.Stmt:
    return store if condition is None else tirx.IfThenElse(condition, store, None)


def expr_dtype(expr: Any) -> str:
    """The dtype of a TIR expression (0.27 expressions carry it in ``.ty``, not ``.dtype``)."""
    return str(expr.ty.dtype)


def convert_to(value: Any, dtype: str) -> Any:
    """``value`` (a Python number or a PrimExpr) as a PrimExpr of ``dtype``."""
    if isinstance(value, bool | int | float):
        return tirx.const(value, dtype)
    return value if expr_dtype(value) == dtype else tirx.Cast(dtype, value)


def _load(buffer: Any, index: list[Any], dtype: str) -> Any:
    # A load of ``buffer`` converted to ``dtype`` (loads carry no dtype attribute in 0.27).
    value = tirx.BufferLoad(buffer, index)
    return value if str(buffer.dtype) == dtype else tirx.Cast(dtype, value)


def emit_tile_copy(
    src: TileRegion, dst: TileRegion, pad_value: PrimExprLike | None = None
) -> tirx.Stmt:
    """Return a statement copying tile ``src`` into tile ``dst`` (cast to dst's dtype).

    Unit dimensions are ignored when matching the two shapes, so a
    ``[1, 64]`` row copies into a ``[64]`` tile.

    With ``pad_value=None`` elements outside either buffer are skipped. With a
    value (the kernel language uses 0), elements of ``dst`` whose source lies
    outside ``src``'s buffer are written with it: a copy from a partial
    source tile gives zeros there (docs/language.md).

    Raises:
        ValueError: if the non-unit extents of ``src`` and ``dst`` differ.
    """
    shape = src.squeezed_extents
    if shape != dst.squeezed_extents:
        raise ValueError(
            f"emit_tile_copy: the tile shapes must match (ignoring extents of 1); src "
            f"{src.buffer.name}{list(src.extents)} vs dst {dst.buffer.name}{list(dst.extents)}"
        )
    shape = shape or (1,)
    dst_dtype = str(dst.buffer.dtype)

    def body(iv: list[Any]) -> tirx.Stmt:
        value = _load(src.buffer, src.index(iv), dst_dtype)
        if pad_value is None:
            store = tirx.BufferStore(dst.buffer, value, dst.index(iv))
            return _guarded(store, _both(src.inside(iv), dst.inside(iv)))
        src_inside = src.inside(iv)
        if src_inside is not None:
            value = tirx.if_then_else(src_inside, value, convert_to(pad_value, dst_dtype))
        return _guarded(tirx.BufferStore(dst.buffer, value, dst.index(iv)), dst.inside(iv))

    return _loop_nest(list(shape), body, vectorize_last=True)


def emit_tile_fill(dst: TileRegion, value: PrimExprLike) -> tirx.Stmt:
    """Return a statement setting every element of tile ``dst`` to ``value`` (cast to its dtype)."""
    dtype = str(dst.buffer.dtype)
    fill_value = convert_to(value, dtype)
    shape = dst.squeezed_extents or (1,)

    def body(iv: list[Any]) -> tirx.Stmt:
        return _guarded(tirx.BufferStore(dst.buffer, fill_value, dst.index(iv)), dst.inside(iv))

    return _loop_nest(list(shape), body, vectorize_last=True)


def _reduce_parts(kind: str, dtype: str) -> tuple[Any, Callable[[Any, Any], Any]]:
    """The identity and the combining function of reduction ``kind`` over ``dtype``.

    Float max/min follow the GPU's rule (`cpu-max-min-ignore-nan`): a NaN element is
    ignored. The accumulator starts at the identity (or at ``dst``'s old value with NaN
    replaced by the identity, `emit_tile_reduce`) and only ever takes an element that
    compared larger, so it is never NaN, and ``x > acc ? x : acc`` is the whole rule:
    one compare and one blend per lane (``maxps`` on x86), where the general rule
    for two operands that may both be NaN costs four.
    """

    def absolute(x: Any) -> Any:
        return tirx.abs(x)

    def larger(acc: Any, x: Any) -> Any:
        return tirx.Select(x > acc, x, acc) if is_float(dtype) else tirx.max(acc, x)

    def smaller(acc: Any, x: Any) -> Any:
        return tirx.Select(x < acc, x, acc) if is_float(dtype) else tirx.min(acc, x)

    if kind == "sum":
        return tirx.const(0, dtype), lambda acc, x: acc + x
    if kind == "abssum":
        return tirx.const(0, dtype), lambda acc, x: acc + absolute(x)
    if kind == "max":
        return max_identity(dtype), larger
    if kind == "absmax":
        return tirx.const(0, dtype), lambda acc, x: larger(acc, absolute(x))
    if kind == "min":
        return min_identity(dtype), smaller
    raise ValueError(f"emit_tile_reduce kind: expected one of {list(REDUCE_KINDS)}, got {kind!r}")


def reduce_identity(kind: str, dtype: str) -> Any:
    """The value a reduction ``kind`` (one of `REDUCE_KINDS`) of no element gives in ``dtype``
    (what `emit_tile_reduce` with ``clear`` starts from).

    Raises:
        ValueError: an unknown ``kind``.
    """
    return _reduce_parts(kind, dtype)[0]


def _check_dim(caller: str, dim: object, rank: int) -> int:
    if not isinstance(dim, int) or isinstance(dim, bool) or not -rank <= dim < rank:
        raise ValueError(f"{caller} dim: expected an int in [{-rank}, {rank}), got {dim!r}")
    return dim % rank


def emit_tile_reduce(
    src: TileRegion,
    dst: TileRegion,
    dim: int,
    kind: str = "sum",
    clear: bool = True,
    lanes: int = 1,
) -> tirx.Stmt:
    """Return a statement reducing tile ``src`` along its dimension ``dim`` into tile ``dst``.

    Args:
        src: the tile to reduce.
        dst: the result tile: ``src``'s extents without ``dim`` (extents of 1
            are ignored when comparing, so ``[m]`` and ``[m, 1]`` both work).
        dim: the reduced dimension of ``src`` (negative counts from the end).
        kind: one of `REDUCE_KINDS`.
        clear: start from the reduction's identity; with ``False`` fold into
            ``dst``'s current values.
        lanes: vector lanes for reducing along the innermost dimension of a
            tile that needs no bounds guards: the reduced dim is cut into
            ``lanes`` partial results (a vectorized loop), folded at the end.
            Sums are then added in a different order. 1 keeps a scalar loop.

    Raises:
        ValueError: for an unknown kind, a ``dim`` out of range, shapes
            that do not match, or ``lanes`` < 1.
    """
    if not isinstance(lanes, int) or isinstance(lanes, bool) or lanes < 1:
        raise ValueError(f"emit_tile_reduce lanes: expected a positive int, got {lanes!r}")
    extents = list(src.extents)
    dim = _check_dim("emit_tile_reduce", dim, len(extents))
    out_extents = extents[:dim] + extents[dim + 1 :]
    if tuple(e for e in out_extents if e != 1) != dst.squeezed_extents:
        raise ValueError(
            f"emit_tile_reduce: dst {dst.buffer.name}{list(dst.extents)} must have src's "
            f"extents {extents} without dim {dim}, i.e. {out_extents} (ignoring 1s)"
        )
    dtype = str(dst.buffer.dtype)
    identity, combine = _reduce_parts(kind, dtype)
    reduced = tirx.Var("r", "int32")

    def dst_index(out_iv: list[Any]) -> list[Any]:
        squeezed = [i for i, e in zip(out_iv, out_extents, strict=True) if e != 1]
        return dst.index(squeezed)

    def dst_inside(out_iv: list[Any]) -> Any | None:
        return dst.inside([i for i, e in zip(out_iv, out_extents, strict=True) if e != 1])

    def update(out_iv: list[Any]) -> tirx.Stmt:
        src_iv = [*out_iv[:dim], reduced, *out_iv[dim:]]
        value = _load(src.buffer, src.full_index(src_iv), dtype)
        index = dst_index(out_iv)
        store = tirx.BufferStore(
            dst.buffer, combine(tirx.BufferLoad(dst.buffer, index), value), index
        )
        return _guarded(store, _both(src.inside(src.squeeze(src_iv)), dst_inside(out_iv)))

    reduce_extent = extents[dim]
    if out_extents and dim != len(extents) - 1 and out_extents[-1] > 1:
        # The reduction loop goes outside the innermost output loop, which vectorizes.
        def outer_body(outer_iv: list[Any]) -> tirx.Stmt:
            lane = tirx.Var("lane", "int32")
            inner = tirx.For(
                lane, 0, out_extents[-1], tirx.ForKind.VECTORIZED, update([*outer_iv, lane])
            )
            return tirx.For(reduced, 0, reduce_extent, tirx.ForKind.SERIAL, inner)

        outer_extents = out_extents[:-1]
        fold = (
            _loop_nest(outer_extents, outer_body, vectorize_last=False, name="o")
            if outer_extents
            else outer_body([])
        )
    else:
        split = _lane_split_fits(src, dim, reduce_extent, lanes)

        def serial_body(out_iv: list[Any]) -> tirx.Stmt:
            if split:
                return _lane_split_reduce(
                    src,
                    dim,
                    out_iv,
                    lanes,
                    dtype,
                    identity,
                    combine,
                    dst,
                    dst_index(out_iv),
                    dst_inside(out_iv),
                )
            return tirx.For(reduced, 0, reduce_extent, tirx.ForKind.SERIAL, update(out_iv))

        fold = (
            _loop_nest(out_extents, serial_body, vectorize_last=False, name="o")
            if out_extents
            else serial_body([])
        )
    ignores_nan = kind in ("max", "min", "absmax") and is_float(dtype)
    if not clear and not ignores_nan:
        return fold

    def init(out_iv: list[Any]) -> tirx.Stmt:
        index = dst_index(out_iv)
        value = identity
        if not clear:  # fold into the old value, a NaN there ignored like any other
            old = tirx.BufferLoad(dst.buffer, index)
            value = tirx.Select(is_nan(old), identity, old)
        return _guarded(tirx.BufferStore(dst.buffer, value, index), dst_inside(out_iv))

    init_stmt = _loop_nest(out_extents, init, vectorize_last=True) if out_extents else init([])
    return tirx.SeqStmt([init_stmt, fold])


def _lane_split_fits(src: TileRegion, dim: int, extent: int, lanes: int) -> bool:
    if lanes < 2 or dim != len(src.extents) - 1 or extent % lanes or extent < 2 * lanes:
        return False
    probe = [tirx.Var(f"probe{d}", "int32") for d in range(len(src.extents))]
    return src.inside(src.squeeze(probe)) is None


def _lane_split_reduce(
    src: TileRegion,
    dim: int,
    out_iv: list[Any],
    lanes: int,
    dtype: str,
    identity: Any,
    combine: Callable[[Any, Any], Any],
    dst: TileRegion,
    index: list[Any],
    inside: Any | None,
) -> tirx.Stmt:
    # `lanes` partial results over a vectorized loop, then one fold into dst.
    part = tirx.decl_buffer((lanes,), dtype, name="reduce_lanes", scope=scopes.GLOBAL)
    init_lane, lane, fold_lane = (tirx.Var(n, "int32") for n in ("lane_init", "lane", "lane_fold"))
    chunk = tirx.Var("chunk", "int32")
    src_iv = [*out_iv[:dim], chunk * lanes + lane, *out_iv[dim:]]
    value = _load(src.buffer, src.full_index(src_iv), dtype)
    init = tirx.For(
        init_lane, 0, lanes, tirx.ForKind.VECTORIZED, tirx.BufferStore(part, identity, [init_lane])
    )
    accumulate = tirx.For(
        chunk,
        0,
        src.extents[dim] // lanes,
        tirx.ForKind.SERIAL,
        tirx.For(
            lane,
            0,
            lanes,
            tirx.ForKind.VECTORIZED,
            tirx.BufferStore(part, combine(tirx.BufferLoad(part, [lane]), value), [lane]),
        ),
    )
    fold = tirx.For(
        fold_lane,
        0,
        lanes,
        tirx.ForKind.SERIAL,
        tirx.BufferStore(
            dst.buffer,
            combine(tirx.BufferLoad(dst.buffer, index), tirx.BufferLoad(part, [fold_lane])),
            index,
        ),
    )
    return _guarded(tirx.SeqStmt([tirx.AllocBuffer(part), init, accumulate, fold]), inside)


def emit_tile_cumsum(
    src: TileRegion,
    dst: TileRegion | None = None,
    dim: int = 0,
    reverse: bool = False,
    kind: str = "sum",
) -> tirx.Stmt:
    """Return a statement writing the inclusive scan of ``src`` along ``dim`` into ``dst``.

    Args:
        src: the input tile.
        dst: the output tile (same extents, ignoring 1s); ``None`` means in place.
        dim: the scanned dimension of ``src`` (negative counts from the end).
        reverse: scan from the end (suffix sums / maxima).
        kind: the combine, one of `tl_ir.SCAN_KINDS` (``"sum"``: ``T.cumsum``,
            ``"max"``: ``T.cummax``).

    Raises:
        ValueError: for a ``dim`` out of range, mismatched shapes or an unknown ``kind``.
    """
    target = dst if dst is not None else src
    if target.squeezed_extents != src.squeezed_extents:
        raise ValueError(
            f"emit_tile_cumsum: dst {target.buffer.name}{list(target.extents)} must match src "
            f"{src.buffer.name}{list(src.extents)} (ignoring extents of 1)"
        )
    extents = list(src.extents)
    dim = _check_dim("emit_tile_cumsum", dim, len(extents))
    dtype = str(target.buffer.dtype)
    identity, combine = scan_parts(kind, dtype)
    others = extents[:dim] + extents[dim + 1 :]

    def scan(other_iv: list[Any]) -> tirx.Stmt:
        step = tirx.Var("s", "int32")
        position = (extents[dim] - 1 - step) if reverse else step
        running = tirx.decl_buffer((1,), dtype, name="running", scope=scopes.GLOBAL)
        src_iv = src.squeeze([*other_iv[:dim], position, *other_iv[dim:]])
        value = _load(src.buffer, src.index(src_iv), dtype)
        inside = src.inside(src_iv)
        if inside is not None:
            value = tirx.if_then_else(inside, value, identity)
        add = tirx.BufferStore(running, combine(tirx.BufferLoad(running, [0]), value), [0])
        write = _guarded(
            tirx.BufferStore(target.buffer, tirx.BufferLoad(running, [0]), target.index(src_iv)),
            target.inside(src_iv),
        )
        loop = tirx.For(step, 0, extents[dim], tirx.ForKind.SERIAL, tirx.SeqStmt([add, write]))
        init = tirx.BufferStore(running, identity, [0])
        return tirx.SeqStmt([tirx.AllocBuffer(running), init, loop])

    if not others:
        return scan([])
    return _loop_nest(others, scan, vectorize_last=False, name="c")
