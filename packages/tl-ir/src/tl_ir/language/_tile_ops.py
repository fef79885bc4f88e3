"""Tile ops: copy, fill/clear, gemm, reductions, cumsum and atomics, each a ``tl.*``
call described by `tl_ir.ops`."""

from __future__ import annotations

import builtins as _builtins
import re
from collections.abc import Callable
from typing import Any

import tvm
from tvm import tirx

from tl_ir import ops as _ops
from tl_ir.errors import KernelTypeError, ShapeMismatchError, UnsupportedError
from tl_ir.language._fetching_atomics import fetching_atomic
from tl_ir.language._hints import (
    EVICTION_POLICIES,
    MEMORY_ORDERS,
    GemmWarpPolicy,
    check_choice,
    check_flag,
    check_gemm_policy,
    check_positive_int,
)
from tl_ir.language._operands import (
    Element,
    anchor,
    as_value,
    check_same_tile,
    emit_tile_op,
    fmt_extents,
    is_tile_operand,
    provably_different,
    region_of,
    tile_of,
    tile_operand,
)
from tl_ir.language._safe_values import safe_copy, safe_value_of
from tl_ir.ops import Region

__all__ = [
    "atomic_add",
    "atomic_addx2",
    "atomic_addx4",
    "atomic_max",
    "atomic_min",
    "clear",
    "copy",
    "cummax",
    "cumsum",
    "fill",
    "gemm",
    "reduce",
    "reduce_absmax",
    "reduce_abssum",
    "reduce_max",
    "reduce_min",
    "reduce_sum",
    "transpose",
]


def copy(
    src: Any,
    dst: Any,
    *,
    coalesced_width: int | None = None,
    disable_tma: bool = False,
    eviction_policy: str | None = None,
    prefer_instruction: str | None = None,
    annotations: dict[str, Any] | None = None,
    loop_layout: Any = None,
) -> Any:
    """Copy the ``src`` tile into the ``dst`` tile.

    Each side is a buffer, a region ``A[i:i+m, j:j+n]`` or an element access
    ``A[i, j]`` meaning "the tile anchored here, shaped like the other side".
    ``coalesced_width``, ``disable_tma``, ``eviction_policy``, ``prefer_instruction``,
    ``annotations`` and ``loop_layout`` are TileLang's instruction-selection hints:
    checked, then left to the target (they never change the copied values).

    A source buffer given a value by ``T.annotate_safe_value`` reads that value where
    the tile lies outside it (the copy is then an element-parallel loop).

    Raises:
        KernelTypeError: an operand is not a buffer, region or element access.
        ShapeMismatchError: the two tiles cannot have the same extents.
    """
    check_positive_int(coalesced_width, "T.copy(coalesced_width=...)", allow_none=True)
    check_flag(disable_tma, "T.copy(disable_tma=...)")
    check_choice(eviction_policy, EVICTION_POLICIES, "T.copy(eviction_policy=...)")
    _check_hint_types(prefer_instruction, annotations)
    s = tile_operand(src, "T.copy(src, dst): src", _ops.ACCESS_READ)
    d = tile_operand(dst, "T.copy(src, dst): dst", _ops.ACCESS_WRITE)
    if isinstance(s, Element) and isinstance(d, Element):
        s = region_of(src, "T.copy", _ops.ACCESS_READ)
        d = region_of(dst, "T.copy", _ops.ACCESS_WRITE)
    elif isinstance(s, Element):
        assert isinstance(d, Region)
        s = anchor(s, d.extents, _ops.ACCESS_READ, "T.copy(src, dst)")
    elif isinstance(d, Element):
        d = anchor(d, s.extents, _ops.ACCESS_WRITE, "T.copy(src, dst)")
    assert isinstance(s, Region) and isinstance(d, Region)
    check_same_tile(s, d, "T.copy(src, dst)")
    safe_value = safe_value_of(s.buffer)
    if safe_value is not None:
        return safe_copy(s, d, safe_value)
    return emit_tile_op("tl.copy", s, d)


def fill(buffer: Any, value: Any) -> Any:
    """Set every element of a buffer or region to ``value`` (cast to its dtype)."""
    dst = region_of(buffer, "T.fill(buffer, value): buffer", _ops.ACCESS_WRITE)
    return emit_tile_op("tl.fill", dst, as_value(value, dst.dtype))


def clear(buffer: Any) -> Any:
    """Set every element of a buffer or region to zero."""
    return fill(buffer, 0)


def _matrix(region: Region, name: str) -> tuple[Any, Any]:
    extents = list(region.extents)
    while len(extents) > 2 and _ops.const_int(extents[0]) == 1:
        extents.pop(0)
    if len(extents) != 2:
        raise ShapeMismatchError(
            f"T.gemm: {name} must be a 2-D tile, got {region.buffer.name} with tile "
            f"{fmt_extents(region.extents)}"
        )
    return extents[0], extents[1]


def gemm(
    A: Any,
    B: Any,
    C: Any,
    transpose_A: bool = False,
    transpose_B: bool = False,
    policy: Any = GemmWarpPolicy.Square,
    clear_accum: bool = False,
    k_pack: int = 1,
    wg_wait: int = 0,
    mbar: Any = None,
    annotations: dict[str, Any] | None = None,
) -> Any:
    """``C += op(A) @ op(B)`` on tiles; ``op`` transposes when asked; accumulation in
    C's dtype; with ``clear_accum`` C is zeroed first.

    The arguments are TileLang's, in its order. ``policy`` (a `GemmWarpPolicy`),
    ``k_pack``, ``wg_wait`` and ``annotations`` are scheduling hints, checked and left
    to the target.

    Raises:
        KernelTypeError: an operand is not a tile; a flag is not a bool; a bad hint; A
            and B differ in dtype, or C is narrower than them or of another kind.
        UnsupportedError: ``mbar`` (an asynchronous Blackwell MMA barrier) is given.
        ShapeMismatchError: the inner dims of A and B or the dims of C disagree.
    """
    transpose_A = check_flag(transpose_A, "T.gemm(transpose_A=...)")
    transpose_B = check_flag(transpose_B, "T.gemm(transpose_B=...)")
    clear_accum = check_flag(clear_accum, "T.gemm(clear_accum=...)")
    warp_policy = check_gemm_policy(policy)
    check_positive_int(k_pack, "T.gemm(k_pack=...)")
    wg_wait = _ops.exact_int(wg_wait)
    if isinstance(wg_wait, _builtins.bool) or not isinstance(wg_wait, int):
        raise KernelTypeError(f"T.gemm(wg_wait=...): expected an int, got {wg_wait!r}")
    if mbar is not None:
        raise UnsupportedError(
            "T.gemm(mbar=...): asynchronous MMA completion barriers (tcgen05) are not "
            "supported; call T.gemm without mbar"
        )
    _check_hint_types(None, annotations)
    a = tile_of(A, "T.gemm: A", _ops.ACCESS_READ)
    b = tile_of(B, "T.gemm: B", _ops.ACCESS_READ)
    c = tile_of(C, "T.gemm: C", _ops.ACCESS_READ_WRITE)
    a0, a1 = _matrix(a, "A")
    b0, b1 = _matrix(b, "B")
    c0, c1 = _matrix(c, "C")
    m, ka = (a1, a0) if transpose_A else (a0, a1)
    kb, n = (b1, b0) if transpose_B else (b0, b1)
    shapes = (
        f"A {a.buffer.name} is {fmt_extents((a0, a1))}{' (transposed)' if transpose_A else ''}, "
        f"B {b.buffer.name} is {fmt_extents((b0, b1))}{' (transposed)' if transpose_B else ''}, "
        f"C {c.buffer.name} is {fmt_extents((c0, c1))}"
    )
    _check_gemm_dtypes(a, b, c)
    if provably_different(ka, kb):
        raise ShapeMismatchError(
            f"T.gemm: inner dims disagree: expected A's K ({ka}) to equal B's K ({kb}); {shapes}"
        )
    if provably_different(m, c0) or provably_different(n, c1):
        raise ShapeMismatchError(
            f"T.gemm: expected C to be M x N = {fmt_extents((m, n))}; {shapes}"
        )
    return emit_tile_op(
        "tl.gemm",
        a,
        b,
        c,
        tirx.IntImm("int32", int(_builtins.bool(transpose_A))),
        tirx.IntImm("int32", int(_builtins.bool(transpose_B))),
        tirx.IntImm("int32", int(_builtins.bool(clear_accum))),
        _as_index(c0),
        _as_index(c1),
        _as_index(ka),
        tirx.IntImm("int32", int(warp_policy)),
    )


def _dtype_family(dtype: str) -> tuple[str, int]:
    """``(kind, bits)`` of a scalar dtype name: ``float16`` -> ``("float", 16)``; the
    narrow floats (``float8_e4m3``, ``float4_e2m1fn``...) -> ``("float8", bits)``."""
    narrow = re.match(r"float([468])_", dtype)
    if narrow:
        return "float8", int(narrow[1])
    match = re.fullmatch(r"([a-z]+)(\d+)", dtype)
    return (match[1], int(match[2])) if match else (dtype, 0)


def _check_gemm_dtypes(a: Region, b: Region, c: Region) -> None:
    """One GEMM instruction takes A and B of one dtype and accumulates in a C at least as
    wide, of the same kind (float with float, integer with integer): the rule every
    target's GEMM (CPU micro-kernel, tensor-core MMA) follows. Mixed operands would be
    converted silently by some lowering and not others, so they are refused here.

    Raises:
        KernelTypeError: A and B differ in dtype, or C cannot hold their products.
    """
    a_dtype, b_dtype, c_dtype = (str(r.buffer.ty.dtype) for r in (a, b, c))
    operands = (
        f"A {a.buffer.name} is {a_dtype}, B {b.buffer.name} is {b_dtype}, "
        f"C {c.buffer.name} is {c_dtype}"
    )
    a_family, a_bits = _dtype_family(a_dtype)
    b_family = _dtype_family(b_dtype)[0]
    if a_dtype != b_dtype and not (a_family == b_family == "float8"):
        raise KernelTypeError(
            f"T.gemm: expected A and B of one dtype (a GEMM instruction multiplies one "
            f"type), got {operands}; T.copy one operand into a tile of the other's dtype first"
        )
    c_family, c_bits = _dtype_family(c_dtype)
    floats = ("float", "bfloat", "float8")
    integers = ("int", "uint")
    same_kind = (a_family in floats and c_family == "float") or (
        a_family in integers and c_family in integers
    )
    if not same_kind or c_bits < a_bits:
        raise KernelTypeError(
            f"T.gemm: expected C to accumulate A x B in a dtype at least as wide and of "
            f"the same kind (float for float operands, int for int ones), got {operands}"
        )


def _as_index(value: Any) -> Any:
    value = _ops.exact_int(value)
    return tirx.IntImm("int32", value) if isinstance(value, int) else value


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
    _check_hint_types(None, annotations)
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
        _check_hint_types(None, annotations)
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


def _check_hint_types(prefer_instruction: Any, annotations: Any) -> None:
    if prefer_instruction is not None and not isinstance(prefer_instruction, str):
        raise KernelTypeError(
            f"prefer_instruction=...: expected a str or None, got {prefer_instruction!r}"
        )
    if annotations is not None and not isinstance(annotations, dict):
        raise KernelTypeError(f"annotations=...: expected a dict or None, got {annotations!r}")


def _atomic(kind: str) -> Callable[..., Any]:
    def atomic(
        dst: Any,
        value: Any,
        memory_order: str | None = None,
        return_prev: bool = False,
        use_tma: bool = False,
        annotations: dict[str, Any] | None = None,
    ) -> Any:
        where = f"T.atomic_{kind}(dst, value)"
        check_choice(memory_order, MEMORY_ORDERS, f"T.atomic_{kind}(memory_order=...)")
        fetch = check_flag(return_prev, f"T.atomic_{kind}(return_prev=...)")
        check_flag(use_tma, f"T.atomic_{kind}(use_tma=...)")
        _check_hint_types(None, annotations)
        if fetch and is_tile_operand(value):
            raise UnsupportedError(
                f"T.atomic_{kind}(return_prev=True): only a scalar update of one element "
                "returns its previous value (as in TileLang); a tile value updates a tile. "
                f"Write T.atomic_{kind}(dst[i], value[i], return_prev=True) per element"
            )
        if is_tile_operand(value):
            v = tile_of(value, f"{where}: value", _ops.ACCESS_READ)
            d_op = tile_operand(dst, f"{where}: dst", _ops.ACCESS_READ_WRITE)
            d = (
                anchor(d_op, v.extents, _ops.ACCESS_READ_WRITE, where)
                if isinstance(d_op, Element)
                else d_op
            )
            check_same_tile(v, d, where)
            return emit_tile_op(f"tl.atomic_{kind}", d, v)
        d_op = tile_operand(dst, f"{where}: dst", _ops.ACCESS_READ_WRITE)
        if not isinstance(d_op, Element):
            raise KernelTypeError(
                f"{where}: a scalar value updates one element: expected dst to be an "
                f"element access A[i, j], got the tile {d_op.buffer.name}{fmt_extents(d_op.extents)}"
            )
        d = region_of(dst, where, _ops.ACCESS_READ_WRITE)
        if fetch:
            return fetching_atomic(kind, d, as_value(value, d.dtype))
        return emit_tile_op(f"tl.atomic_{kind}", d, as_value(value, d.dtype))

    atomic.__name__ = f"atomic_{kind}"
    atomic.__doc__ = (
        f"Atomic {kind} of ``value`` into ``dst``: an element ``A[i, j]`` with a scalar "
        "value, or a tile with a tile value of the same extents (elementwise). "
        "``memory_order`` (checked) is a hint: every target's atomics are at least as "
        "strong as ``relaxed`` and the kernel's barriers order them; ``use_tma`` and "
        "``annotations`` are hints too. With ``return_prev=True`` (a scalar update "
        "only) the call is an expression: ``dst``'s value from just before this "
        "thread's update, read and updated as one atomic step (`fetching_atomic`).\n\n"
        "Raises:\n    UnsupportedError: ``return_prev=True`` with a tile value, or "
        "outside a kernel body."
    )
    return atomic


atomic_add = _atomic("add")
atomic_max = _atomic("max")
atomic_min = _atomic("min")


def _vector_operand(value: Any, width: int, access: int, where: str) -> Region:
    operand = tile_operand(value, where, access)
    if isinstance(operand, Element):
        return anchor(operand, [tirx.IntImm("int32", width)], access, where)
    wide = [e for e in operand.extents if _ops.const_int(e) != 1]
    if len(wide) != 1 or _ops.const_int(wide[0]) != width:
        raise ShapeMismatchError(
            f"{where}: expected an element access or a run of {width} elements, got "
            f"{operand.buffer.name}{fmt_extents(operand.extents)}"
        )
    return operand


def _atomic_add_wide(width: int) -> Callable[..., Any]:
    def atomic_add_wide(dst: Any, value: Any, return_prev: bool = False) -> Any:
        where = f"T.atomic_addx{width}(dst, value)"
        if check_flag(return_prev, f"T.atomic_addx{width}(return_prev=...)"):
            raise UnsupportedError(
                f"T.atomic_addx{width}(return_prev=True): returning the previous values is "
                "not supported; the atomic updates dst and returns nothing"
            )
        d = _vector_operand(dst, width, _ops.ACCESS_READ_WRITE, f"{where}: dst")
        v = _vector_operand(value, width, _ops.ACCESS_READ, f"{where}: value")
        check_same_tile(v, d, where)
        return emit_tile_op("tl.atomic_add", d, v)

    atomic_add_wide.__name__ = f"atomic_addx{width}"
    atomic_add_wide.__doc__ = (
        f"TileLang's {width}-wide atomic add: ``dst[..., j + k] += value[..., j + k]`` for "
        f"k < {width}, each element atomically (``dst`` and ``value`` are element accesses "
        f"``B[i, j]`` or runs ``B[i, j:j + {width}]`` along the last dim). TileLang's "
        "single wide instruction is one target's way to do it; each element's update is "
        "atomic on every target, which is what the sum needs.\n\n"
        "Raises:\n    ShapeMismatchError: an operand is not one element or a run of "
        f"{width}.\n    UnsupportedError: ``return_prev=True``."
    )
    return atomic_add_wide


atomic_addx2 = _atomic_add_wide(2)
atomic_addx4 = _atomic_add_wide(4)


def transpose(src: Any, dst: Any, annotations: dict[str, Any] | None = None) -> None:
    """``dst[..., j, i] = src[..., i, j]`` for the last two dims of two tiles (TileLang's
    shared-memory transpose); written as a ``T.Parallel`` loop over the tile, so every
    target lowers it like any element-parallel loop.

    Raises:
        KernelTypeError: an operand is not a tile; a leading dim is not 1.
        ShapeMismatchError: dst is not src's last two dims swapped.
    """
    from tvm.script.ir_builder import tirx as _IB

    from tl_ir.language._loops import Parallel

    where = "T.transpose(src, dst)"
    _check_hint_types(None, annotations)
    s = tile_of(src, f"{where}: src", _ops.ACCESS_READ)
    d = tile_of(dst, f"{where}: dst", _ops.ACCESS_WRITE)
    for name, region in (("src", s), ("dst", d)):
        if region.rank < 2 or any(_ops.const_int(e) != 1 for e in region.extents[:-2]):
            raise KernelTypeError(
                f"{where}: expected {name} to be a 2-D tile (leading dims of extent 1), got "
                f"{region.buffer.name}{fmt_extents(region.extents)}"
            )
    rows, cols = s.extents[-2], s.extents[-1]
    if provably_different(d.extents[-2], cols) or provably_different(d.extents[-1], rows):
        raise ShapeMismatchError(
            f"{where}: dst must be src's tile transposed: src {s.buffer.name} is "
            f"{fmt_extents((rows, cols))}, dst {d.buffer.name} is "
            f"{fmt_extents(d.extents[-2:])}"
        )
    with Parallel(rows, cols) as (i, j):
        src_index = [*s.mins[:-2], s.mins[-2] + i, s.mins[-1] + j]
        dst_index = [*d.mins[:-2], d.mins[-2] + j, d.mins[-1] + i]
        value = tirx.BufferLoad(s.buffer, src_index)
        _IB.buffer_store(d.buffer, as_value(value, d.dtype), dst_index)
