"""Tile reductions (``T.reduce*``) and scans (``T.cumsum``/``T.cummax``), each a
``tl.reduce``/``tl.cumsum`` call described by `tl_ir.ops`."""

from __future__ import annotations

import builtins as _builtins
from collections.abc import Callable
from typing import Any

import tvm
from tvm import tirx

from tl_ir import ops as _ops
from tl_ir.errors import KernelTypeError, ShapeMismatchError, UnsupportedError
from tl_ir.language._hints import (
    check_flag,
    check_hint_types,
    check_positive_int,
)
from tl_ir.language._operands import (
    check_same_tile,
    emit_tile_op,
    fmt_extents,
    provably_different,
    tile_of,
)
from tl_ir.ops import Region

__all__ = [
    "cummax",
    "cumsum",
    "reduce",
    "reduce_absmax",
    "reduce_abssum",
    "reduce_max",
    "reduce_min",
    "reduce_sum",
]


def _normalize_dim(dim: Any, rank: int, where: str) -> int:
    dim = _ops.exact_int(dim)
    if isinstance(dim, _builtins.bool) or not isinstance(dim, int):
        raise KernelTypeError(f"{where}: expected dim to be an int, got {dim!r}")
    if not -rank <= dim < rank:
        raise KernelTypeError(f"{where}: dim {dim} is out of range for a {rank}-D tile")
    return dim % rank


def reduce(
    src: Any,
    dst: Any,
    dim: Any,
    kind: Any,
    clear: bool = True,
    batch: int = 1,
    nan_propagate: bool = False,
    annotations: dict[str, Any] | None = None,
) -> Any:
    """Reduce the ``src`` tile along ``dim`` into ``dst`` with ``kind`` (one of
    ``sum max min abssum absmax``); ``clear=False`` folds into dst's old values.

    ``dst`` has ``src``'s shape without ``dim`` (or with ``dim`` of extent 1).
    TileLang's argument order ``reduce(src, dst, kind, dim)`` is accepted too.

    ``batch`` (an int >= 1) and ``annotations`` (a dict) are TileLang's performance
    hints for the GPU's cross-thread combine; the result does not depend on them, and
    they are checked and otherwise ignored. ``nan_propagate=False`` (the default) is the
    rule every target follows: a float max/min ignores NaN elements. ``nan_propagate=True``
    (a NaN anywhere makes the max/min NaN) is accepted where it changes nothing (a sum,
    or integer elements) and refused for a float max/min/absmax.

    Raises:
        KernelTypeError: unknown kind, bad dim, non-tile operands, ``batch`` not an int
            >= 1, ``nan_propagate`` not a bool, ``annotations`` not a dict.
        ShapeMismatchError: dst's shape does not fit.
        UnsupportedError: ``nan_propagate=True`` on a float max, min or absmax (also a
            `NotImplementedError`).
    """
    return _reduce(src, dst, dim, kind, clear, batch, nan_propagate, annotations, "T.reduce")


def _reduce(
    src: Any,
    dst: Any,
    dim: Any,
    kind: Any,
    clear: bool,
    batch: Any,
    nan_propagate: Any,
    annotations: Any,
    spelled: str,
) -> Any:
    if isinstance(dim, str) and not isinstance(kind, str):
        dim, kind = kind, dim
    where = "T.reduce(src, dst, dim, kind)"
    if kind not in _ops.REDUCE_KINDS:
        raise KernelTypeError(
            f"{where}: expected kind to be one of {', '.join(_ops.REDUCE_KINDS)}, got {kind!r}"
        )
    check_positive_int(batch, f"{spelled}(batch=...) (a performance hint: an int >= 1)")
    propagate = check_flag(nan_propagate, f"{spelled}(nan_propagate=...)")
    clear = check_flag(clear, f"{spelled}(clear=...)")
    check_hint_types(None, annotations)
    s = tile_of(src, f"{where}: src", _ops.ACCESS_READ)
    d = tile_of(dst, f"{where}: dst", _ops.ACCESS_READ_WRITE if not clear else _ops.ACCESS_WRITE)
    if propagate:
        _check_nan_propagation(kind, s, d, spelled)
    axis = _normalize_dim(dim, s.rank, where)
    kept = [e for i, e in enumerate(s.extents) if i != axis]
    d_ext = list(d.extents)
    if len(d_ext) == s.rank:
        if _ops.const_int(d_ext[axis]) != 1:
            raise ShapeMismatchError(
                f"{where}: dst {d.buffer.name} {fmt_extents(d_ext)} has src's rank, so its dim "
                f"{axis} must be 1; src {s.buffer.name} is {fmt_extents(s.extents)}"
            )
        d_ext.pop(axis)
    if len(d_ext) != len(kept) or any(
        provably_different(a, b) for a, b in zip(kept, d_ext, strict=False)
    ):
        raise ShapeMismatchError(
            f"{where}: reducing {s.buffer.name} {fmt_extents(s.extents)} along dim {axis} gives "
            f"{fmt_extents(kept)}, but dst {d.buffer.name} is {fmt_extents(d.extents)}"
        )
    return emit_tile_op(
        "tl.reduce",
        s,
        d,
        tvm.ir.StringImm(kind),
        tirx.IntImm("int32", axis),
        tirx.IntImm("int32", int(_builtins.bool(clear))),
    )


def _check_nan_propagation(kind: str, src: Region, dst: Region, spelled: str) -> None:
    """Accept ``nan_propagate=True`` where every target already gives its result: a sum
    (a NaN element makes it NaN) or a reduction without float operands (no NaN exists).

    Raises:
        UnsupportedError: a float max, min or absmax.
    """
    if kind in ("sum", "abssum"):
        return
    dtypes = (str(src.buffer.ty.dtype), str(dst.buffer.ty.dtype))
    if not any(d.startswith(("float", "bfloat")) for d in dtypes):
        return
    raise UnsupportedError(
        f"{spelled}(nan_propagate=True) is not supported yet: a float {kind} reduction "
        f"(src {src.buffer.name} is {src.buffer.ty.dtype}) ignores NaN elements on every "
        "target, and a NaN-propagating one is not implemented. Test the tile for NaN "
        "yourself (x != x) or pass nan_propagate=False"
    )


def _reducer(kind: str) -> Callable[..., Any]:
    spelled = f"T.reduce_{kind}"
    if kind in ("sum", "abssum"):
        # As in TileLang: nan_propagate is a keyword of the max/min reductions only.

        def reducer(
            src: Any,
            dst: Any,
            dim: int = -1,
            clear: bool = True,
            batch: int = 1,
            annotations: dict[str, Any] | None = None,
        ) -> Any:
            return _reduce(src, dst, dim, kind, clear, batch, False, annotations, spelled)

        extra = ""
    else:

        def reducer(  # type: ignore[misc]
            src: Any,
            dst: Any,
            dim: int = -1,
            clear: bool = True,
            batch: int = 1,
            nan_propagate: bool = False,
            annotations: dict[str, Any] | None = None,
        ) -> Any:
            return _reduce(src, dst, dim, kind, clear, batch, nan_propagate, annotations, spelled)

        extra = (
            " ``nan_propagate=True`` (TileLang: a NaN makes the result NaN) is refused for "
            "float tiles (`UnsupportedError`)."
        )
    reducer.__name__ = f"reduce_{kind}"
    reducer.__doc__ = (
        f"``T.reduce(src, dst, dim, {kind!r}, clear)`` (dim defaults to -1). ``batch`` (an "
        "int >= 1) and ``annotations`` (a dict) are TileLang's performance hints, checked "
        f"and ignored.{extra}"
    )
    return reducer


reduce_sum = _reducer("sum")
reduce_max = _reducer("max")
reduce_min = _reducer("min")
reduce_abssum = _reducer("abssum")
reduce_absmax = _reducer("absmax")


def _scan(kind: str) -> Callable[..., Any]:
    def scan(
        src: Any,
        dst: Any = None,
        dim: int = 0,
        reverse: bool = False,
        annotations: dict[str, Any] | None = None,
    ) -> Any:
        where = f"T.cum{kind}(src, dst, dim, reverse)"
        reverse = check_flag(reverse, f"T.cum{kind}(reverse=...)")
        check_hint_types(None, annotations)
        s = tile_of(src, f"{where}: src", _ops.ACCESS_READ)
        d = tile_of(src if dst is None else dst, f"{where}: dst", _ops.ACCESS_WRITE)
        axis = _normalize_dim(dim, s.rank, where)
        check_same_tile(s, d, where)
        return emit_tile_op(
            f"tl.cum{kind}",
            s,
            d,
            tirx.IntImm("int32", axis),
            tirx.IntImm("int32", int(_builtins.bool(reverse))),
        )

    what = {"sum": "prefix sum", "max": "running maximum"}[kind]
    scan.__name__ = f"cum{kind}"
    scan.__doc__ = (
        f"Inclusive {what} of ``src`` along ``dim`` into ``dst`` (in place when ``dst`` "
        "is None); from the end when ``reverse``. ``annotations`` is a hint.\n\n"
        "Raises:\n    ShapeMismatchError: ``dst`` is not shaped like ``src``."
    )
    return scan


cumsum = _scan("sum")
cummax = _scan("max")
