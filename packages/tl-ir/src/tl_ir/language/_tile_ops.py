"""Tile ops: copy, fill/clear, gemm and transpose, each a ``tl.*`` call described by
`tl_ir.ops`. Reductions and scans are in `_tile_reductions`, atomics in `_tile_atomics`."""

from __future__ import annotations

import builtins as _builtins
import re
from typing import Any

from tvm import tirx
from tvm.script.ir_builder import tirx as _IB

from tl_ir import ops as _ops
from tl_ir import scopes as _scopes
from tl_ir.errors import (
    KernelTypeError,
    KernelValueError,
    ShapeMismatchError,
    UnsupportedError,
)
from tl_ir.frontend import current_state as _current_state
from tl_ir.language._hints import (
    EVICTION_POLICIES,
    GemmWarpPolicy,
    check_choice,
    check_flag,
    check_gemm_policy,
    check_hint_types,
    check_positive_int,
)
from tl_ir.language._operands import (
    Element,
    anchor,
    as_value,
    check_same_tile,
    emit_tile_op,
    fmt_extents,
    provably_different,
    region_of,
    tile_of,
    tile_operand,
)
from tl_ir.language._safe_values import safe_copy, safe_value_of
from tl_ir.ops import Region

__all__ = [
    "clear",
    "copy",
    "fill",
    "gemm",
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
    check_hint_types(prefer_instruction, annotations)
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


def _open_filled_reducer(buffer: Any) -> None:
    """A reducer filled before ``T.reducer_init`` opened it (``T.clear(r)``, ``T.fill(r,
    v)``: TileLang's first reducer syntax) holds a start value: it is ``"filled"``,
    which `_reducers`' lifecycle lets ``+=`` update and ``T.finalize_reducer(r)``
    finalize in place, and refuses to mix with ``T.reducer_update`` (as TileLang)."""
    state = _current_state()
    phases = state.reducer_phases if state is not None else {}
    for known, phase in phases.items():
        if known.same_as(buffer) and phase in ("allocated", "finalized"):
            phases[known] = "filled"


def fill(buffer: Any, value: Any) -> Any:
    """Set every element of a buffer or region to ``value`` (cast to its dtype)."""
    dst = region_of(buffer, "T.fill(buffer, value): buffer", _ops.ACCESS_WRITE)
    _open_filled_reducer(dst.buffer)
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


def _check_inside_tile(region: _ops.Region, where: str) -> None:
    """Refuse a constant region of a shared, fragment or local tile that reaches past
    the tile (``T.gemm(As[8:24, 0:16], ...)`` on a 16 x 16 ``As``: the CPU lowering
    stopped with its micro-kernel's message, with no line). A tensor's region may
    reach past its end: a partial tile.

    Raises:
        KernelTypeError: names the tile, the dim, the region's bounds and the extent.
    """
    if _scopes.is_global(region.buffer):
        return
    for dim, (low, extent, size) in enumerate(
        zip(region.mins, region.extents, region.buffer.ty.shape, strict=False)
    ):
        low_c, extent_c, size_c = (_ops.const_int(v) for v in (low, extent, size))
        if low_c is None or extent_c is None or size_c is None:
            continue
        if low_c < 0 or low_c + extent_c > size_c:
            raise KernelTypeError(
                f"{where}: the region {low_c}:{low_c + extent_c} of "
                f"{_scopes.buffer_scope(region.buffer)} tile {region.buffer.name} in dim "
                f"{dim} reaches past the tile (extent {size_c}); a tile op reads and writes "
                "only inside a tile"
            )


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
        KernelValueError: ``wg_wait`` below -1.
        UnsupportedError: ``mbar`` (an asynchronous Blackwell MMA barrier) is given.
        ShapeMismatchError: the inner dims of A and B or the dims of C disagree.
    """
    transpose_A = check_flag(transpose_A, "T.gemm(transpose_A=...)")
    transpose_B = check_flag(transpose_B, "T.gemm(transpose_B=...)")
    clear_when = _run_time_condition(clear_accum)
    if clear_when is not None:
        # TileLang's clear_accum=k == 0: C is zeroed when the condition holds at run
        # time, then accumulated into (its GEMM lowerings emit the same branch).
        with _IB.If(clear_when), _IB.Then():
            clear(C)
        clear_accum = False
    clear_accum = check_flag(clear_accum, "T.gemm(clear_accum=...)")
    warp_policy = check_gemm_policy(policy)
    check_positive_int(k_pack, "T.gemm(k_pack=...)")
    wg_wait = _ops.exact_int(wg_wait)
    if isinstance(wg_wait, _builtins.bool) or not isinstance(wg_wait, int):
        raise KernelTypeError(f"T.gemm(wg_wait=...): expected an int, got {wg_wait!r}")
    if wg_wait < -1:
        # TileLang: wg_wait >= 0 waits until that many WGMMA groups are pending, -1 does
        # not wait; nothing else has a meaning.
        raise KernelValueError(
            "T.gemm(wg_wait=...): expected -1 (no wait) or a non-negative count of "
            f"pending warpgroup MMA groups, got {wg_wait}"
        )
    if mbar is not None:
        raise UnsupportedError(
            "T.gemm(mbar=...): asynchronous MMA completion barriers (tcgen05) are not "
            "supported; call T.gemm without mbar"
        )
    check_hint_types(None, annotations)
    a = tile_of(A, "T.gemm: A", _ops.ACCESS_READ)
    b = tile_of(B, "T.gemm: B", _ops.ACCESS_READ)
    c = tile_of(C, "T.gemm: C", _ops.ACCESS_READ_WRITE)
    for region, name in ((a, "A"), (b, "B"), (c, "C")):
        _check_inside_tile(region, f"T.gemm: {name}")
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


def _run_time_condition(flag: Any) -> Any | None:
    """``flag`` as a boolean expression when it is one known only at run time (a
    comparison of loop variables), else None (a bool, or a constant: checked as a flag)."""
    if isinstance(flag, _builtins.bool) or not isinstance(flag, tirx.PrimExpr):
        return None
    if _ops.const_int(flag) is not None:
        return None
    dtype = str(flag.ty.dtype)
    if dtype == "bool":
        return flag
    if dtype.startswith(("int", "uint")):
        return flag != 0
    return None


def _as_index(value: Any) -> Any:
    value = _ops.exact_int(value)
    return tirx.IntImm("int32", value) if isinstance(value, int) else value


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
    check_hint_types(None, annotations)
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
