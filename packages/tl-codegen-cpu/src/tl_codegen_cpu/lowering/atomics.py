"""CPU atomics for ``T.atomic_add`` / ``atomic_max`` / ``atomic_min`` / ``atomic_or`` and
the atomic ``T.atomic_load`` / ``T.atomic_store`` of one element.

TVM 0.27 has no CPU lowering for atomics ("CPU backend does not support
atomic add yet"), so an atomic update becomes a call of
``tl_atomic_<kind>_<dtype>(address, value)``, defined in ``include/tl_atomics.h``
(`tl_codegen_cpu.c_headers.atomics_c_source`) with GCC's ``__atomic`` builtins: ``fetch_add`` for integer adds, a
compare-and-swap loop for floats and for max/min, ``fetch_or`` for ``or``, and a
sequentially consistent ``__atomic_load_n`` / ``__atomic_store_n`` (of the element's
bits) for ``load`` / ``store``, whatever ``memory_order`` asked: at least as strong as
any order. The C toolchain inserts the
prelude into the source; the LLVM toolchain compiles it and links it in.

An update no other thread can race on is a plain read-modify-write with the
same arithmetic (``owned=True``): always for a block-local buffer (``shared``,
fragment, ``local``: one copy per running block, which one core runs start to
end), and for global buffers where `atomic_ownership` proves it.
"""

from __future__ import annotations

from typing import Any

from tvm import tirx

from tl_codegen_cpu.lowering.tile_emitters import TileRegion, convert_to
from tl_ir import scopes

#: The atomic kinds: read-modify-writes ``add``/``max``/``min``/``or`` and the atomic
#: ``load`` and ``store`` of one element (`tl_ir.ops.ATOMIC_KINDS`).
ATOMIC_KINDS: tuple[str, ...] = ("add", "max", "min", "or", "load", "store")

#: dtype -> (C type, same-size integer type for compare-and-swap).
ATOMIC_DTYPES: dict[str, tuple[str, str]] = {
    "float32": ("float", "uint32_t"),
    "float64": ("double", "uint64_t"),
    "int32": ("int32_t", "int32_t"),
    "int64": ("int64_t", "int64_t"),
    "uint32": ("uint32_t", "uint32_t"),
    "uint64": ("uint64_t", "uint64_t"),
}

#: The dtypes ``T.atomic_or`` takes (bitwise: integers only).
BITWISE_ATOMIC_DTYPES: tuple[str, ...] = ("int32", "int64", "uint32", "uint64")


#: 16-bit float dtypes: updated by a compare-and-swap on the 16-bit word, the
#: arithmetic in float32 rounded back to nearest-even; the value travels as a float32
#: (no half-precision argument in the C ABI) and the address as ``void*``.
HALF_ATOMIC_DTYPES: tuple[str, ...] = ("float16", "bfloat16")


def atomic_function_name(kind: str, dtype: str, *, fetch: bool = False) -> str:
    """The C function implementing atomic ``kind`` on ``dtype`` (``tl_atomic_add_float32``);
    with ``fetch`` the one returning the element's previous value
    (``tl_atomic_fetch_add_float32``: the C type of ``dtype``, float for 16-bit floats)."""
    return f"tl_atomic_{'fetch_' if fetch else ''}{kind}_{dtype}"


def atomic_dtypes(kind: str) -> tuple[str, ...]:
    """The dtypes the CPU atomic ``kind`` takes: every dtype of `ATOMIC_DTYPES` and
    `HALF_ATOMIC_DTYPES`, integers only for ``or`` (`BITWISE_ATOMIC_DTYPES`)."""
    if kind == "or":
        return BITWISE_ATOMIC_DTYPES
    return (*ATOMIC_DTYPES, *HALF_ATOMIC_DTYPES)


#: Scopes of block-local buffers: one copy per running block, touched by one core.
_BLOCK_LOCAL_SCOPES = (*scopes.SHARED_SCOPES, *scopes.THREAD_PRIVATE_SCOPES, scopes.FRAGMENT)


def _is_plain(dst: Any, owned: bool) -> bool:
    return owned or str(dst.ty.storage_scope) in _BLOCK_LOCAL_SCOPES


def _combine(kind: str, current: Any, value: Any) -> Any:
    # The same expressions as the C functions (NaN handling included).
    if kind == "add":
        return current + value
    if kind == "max":
        return tirx.Select(value > current, value, current)
    if kind == "or":
        return tirx.bitwise_or(current, value)
    if kind == "store":
        return value
    return tirx.Select(value < current, value, current)


def _plain_update(dst: Any, index: list[Any], value: Any, kind: str, prev: Any = None) -> tirx.Stmt:
    dtype = str(dst.dtype)
    current: Any = tirx.BufferLoad(dst, index)
    keep: list[tirx.Stmt] = []
    if prev is not None:
        # The previous value first, then the update computed from it.
        keep = [tirx.BufferStore(prev.source, current, list(prev.indices))]
        current = prev
    if kind == "load":
        return keep[0]
    if dtype in HALF_ATOMIC_DTYPES and kind == "store":
        update = tirx.BufferStore(dst, convert_to(value, dtype), index)
    elif dtype in HALF_ATOMIC_DTYPES:
        # As the 16-bit CAS: float32 arithmetic on the widened element, rounded once.
        wide = _combine(kind, tirx.Cast("float32", current), convert_to(value, "float32"))
        update = tirx.BufferStore(dst, tirx.Cast(dtype, wide), index)
    else:
        update = tirx.BufferStore(dst, _combine(kind, current, convert_to(value, dtype)), index)
    return tirx.SeqStmt([*keep, update]) if keep else update


def emit_atomic_update(
    dst: Any,
    index: list[Any],
    value: Any,
    kind: str = "add",
    *,
    owned: bool = False,
    prev: Any = None,
) -> tirx.Stmt:
    """Return a statement atomically updating ``dst[index]`` with ``value``.

    Args:
        dst: the TIR buffer (its dtype in `atomic_dtypes` of ``kind``).
        index: one index per dimension of ``dst``.
        value: a PrimExpr or Python number (cast to ``dst``'s dtype).
        kind: one of `ATOMIC_KINDS`.
        owned: no other thread touches ``dst[index]`` while the kernel runs (the
            caller proved it): a plain read-modify-write with the atomic's arithmetic.
            A block-local ``dst`` is always updated so.
        prev: None, or the element (a ``BufferLoad`` of a buffer of ``dst``'s dtype)
            that receives ``dst[index]``'s value from just before the update, read and
            updated in one atomic step (``T.atomic_<kind>(..., return_prev=True)``);
            for ``load`` (required) the loaded value, and ``value`` is unused.

    Raises:
        ValueError: for an unknown kind, an unsupported dtype, or a load without ``prev``.
    """
    if kind not in ATOMIC_KINDS:
        raise ValueError(f"atomic kind: expected one of {list(ATOMIC_KINDS)}, got {kind!r}")
    dtype = str(dst.dtype)
    accepted = atomic_dtypes(kind)
    if dtype not in accepted:
        raise ValueError(
            f"atomic_{kind} on {dst.name}: dtype {dtype} is not supported on the CPU; "
            f"expected one of {list(accepted)}"
        )
    if kind == "load" and prev is None:
        raise ValueError(f"atomic_load of {dst.name}: expected prev (the loaded value's place)")
    if _is_plain(dst, owned):
        return _plain_update(dst, index, value, kind, prev)
    wide = "float32" if dtype in HALF_ATOMIC_DTYPES else dtype
    operand = convert_to(value, wide)
    address = tirx.address_of(tirx.BufferLoad(dst, index))
    if kind == "load":
        loaded = tirx.call_extern(wide, atomic_function_name(kind, dtype), address)
        return tirx.BufferStore(prev.source, convert_to(loaded, dtype), list(prev.indices))
    if prev is None:
        call = tirx.call_extern("int32", atomic_function_name(kind, dtype), address, operand)
        return tirx.Evaluate(call)
    name = atomic_function_name(kind, dtype, fetch=True)
    old = tirx.call_extern(wide, name, address, operand)
    return tirx.BufferStore(prev.source, convert_to(old, dtype), list(prev.indices))


def emit_tile_atomic(
    dst: TileRegion,
    value: TileRegion | Any,
    kind: str = "add",
    *,
    owned: bool = False,
    prev: TileRegion | None = None,
) -> tirx.Stmt:
    """Return a statement applying atomic ``kind`` elementwise over tile ``dst``.

    Args:
        dst: the tile updated atomically; out-of-bounds elements are skipped.
        value: a tile of the same non-unit extents, or a scalar for every element.
        kind: one of `ATOMIC_KINDS`.
        owned: as in `emit_atomic_update`; an owned update of one element is a bare
            (possibly guarded) store, with no loop of extent 1 around it, so that the
            ``T.Parallel`` loop holding it can vectorize.
        prev: None, or the one-element tile receiving the previous value (as in
            `emit_atomic_update`); only with a scalar ``value`` and a one-element ``dst``.

    Raises:
        ValueError: for mismatched tile shapes, an unknown kind or an unsupported dtype,
            or ``prev`` with a tile update.
    """
    if prev is not None and (isinstance(value, TileRegion) or dst.squeezed_extents):
        raise ValueError(
            f"atomic_{kind} returning its previous value: expected one element of "
            f"{dst.buffer.name} and a scalar value, got the tile {list(dst.extents)}"
        )
    shape = dst.squeezed_extents or (1,)
    if isinstance(value, TileRegion) and value.squeezed_extents != dst.squeezed_extents:
        raise ValueError(
            f"atomic_{kind}: value tile {value.buffer.name}{list(value.extents)} must match "
            f"dst {dst.buffer.name}{list(dst.extents)} (ignoring extents of 1)"
        )
    loop_vars = [tirx.Var(f"i{d}", "int32") for d in range(len(shape))]
    iv = loop_vars if dst.squeezed_extents else []
    if isinstance(value, TileRegion):
        element: Any = tirx.BufferLoad(value.buffer, value.index(iv))
        if str(value.buffer.dtype) != str(dst.buffer.dtype):
            element = tirx.Cast(str(dst.buffer.dtype), element)
        condition = value.inside(iv)
    else:
        element, condition = value, None
    keep = None if prev is None else tirx.BufferLoad(prev.buffer, prev.index([]))
    body: tirx.Stmt = emit_atomic_update(
        dst.buffer, dst.index(iv), element, kind, owned=owned, prev=keep
    )
    inside = dst.inside(iv)
    if inside is not None and condition is not None:
        condition = tirx.all(inside, condition)
    elif inside is not None:
        condition = inside
    if condition is not None:
        body = tirx.IfThenElse(condition, body, None)
    if not dst.squeezed_extents and _is_plain(dst.buffer, owned):
        return body
    for depth in reversed(range(len(shape))):
        body = tirx.For(loop_vars[depth], 0, shape[depth], tirx.ForKind.SERIAL, body)
    return body
