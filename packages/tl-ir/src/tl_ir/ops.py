"""Tile operations as TVM Ops (``tl.copy``, ``tl.gemm``...) and their typed descriptions.

IR encoding (what passes may rely on):

* every buffer operand is a ``tl.region(BufferLoad(buf, mins), access, *extents)`` call
  with an explicit extent for every dim of the buffer; ``access`` is 1 (read),
  2 (write) or 3 (read and write);
* attributes are immediates after the operands, in a fixed order per op:

  ===================  ======================================================
  ``tl.copy``          ``src, dst``
  ``tl.fill``          ``dst, value``
  ``tl.gemm``          ``a, b, c, transpose_a, transpose_b, clear_accum, M, N, K``
  ``tl.reduce``        ``src, dst, kind (string), dim, clear``
  ``tl.cumsum``        ``src, dst, dim, reverse``
  ``tl.cummax``        ``src, dst, dim, reverse``
  ``tl.atomic_<k>``    ``dst, value[, prev]`` (``value`` a region or a scalar expression;
                       ``prev``, a one-element region, receives dst's value before the
                       update: ``T.atomic_<k>(..., return_prev=True)``; ``k`` one of
                       `ATOMIC_KINDS`: ``load`` writes nothing, its ``value`` is an
                       unused 0 and its ``prev`` the loaded value, ``store`` writes
                       ``value``)
  ``tl.print``         ``value, msg (string)``
  ===================  ======================================================

Passes never decode these by hand: `describe` turns a call into a frozen dataclass
(`CopyOp`, `GemmOp`...) and `tile_ops` lists the tile ops of a ``PrimFunc`` in
program order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir.ir_values import const_int, data_buffer, exact_int, is_buffer, viewed_buffer

__all__ = [
    "ACCESS_READ",
    "ACCESS_READ_WRITE",
    "ACCESS_WRITE",
    "ATOMIC_KINDS",
    "ELEMENT_ATOMIC_KINDS",
    "OP_NAMES",
    "REDUCE_KINDS",
    "SCAN_KINDS",
    "AtomicOp",
    "CopyOp",
    "CumsumOp",
    "FillOp",
    "GemmOp",
    "PrintOp",
    "ReduceOp",
    "Region",
    "TileOp",
    "const_int",
    "data_buffer",
    "describe",
    "encode",
    "exact_int",
    "is_buffer",
    "is_region_call",
    "is_tile_op",
    "make_call",
    "region_call",
    "scan_parts",
    "tile_ops",
    "viewed_buffer",
]

ACCESS_READ = 1
ACCESS_WRITE = 2
ACCESS_READ_WRITE = 3

#: Reduce kinds accepted by ``T.reduce`` (``reduce_<kind>``).
REDUCE_KINDS: tuple[str, ...] = ("sum", "max", "min", "abssum", "absmax")
#: Inclusive scan kinds (``T.cum<kind>``), each a `CumsumOp` with that ``kind``.
SCAN_KINDS: tuple[str, ...] = ("sum", "max")
#: Atomic kinds (``T.atomic_<kind>``): the read-modify-writes ``add``, ``max``, ``min``,
#: ``or`` (bitwise, integers), and the atomic ``load`` and ``store`` of one element.
ATOMIC_KINDS: tuple[str, ...] = ("add", "max", "min", "or", "load", "store")
#: The atomic kinds that take one element and a scalar only (no tile form).
ELEMENT_ATOMIC_KINDS: tuple[str, ...] = ("or", "load", "store")

#: Every op registered by this module, with the name the IR printer shows.
OP_NAMES: dict[str, str] = {
    "tl.region": "region",
    "tl.copy": "copy",
    "tl.fill": "fill",
    "tl.gemm": "gemm",
    "tl.reduce": "reduce",
    "tl.cumsum": "cumsum",
    "tl.cummax": "cummax",
    "tl.atomic_add": "atomic_add",
    "tl.atomic_max": "atomic_max",
    "tl.atomic_min": "atomic_min",
    "tl.atomic_or": "atomic_or",
    "tl.atomic_load": "atomic_load",
    "tl.atomic_store": "atomic_store",
    "tl.print": "print",
}


def _register_ops() -> dict[str, Any]:
    # A plain int effect kind: the enum object breaks IsPureFunction (TVM_NOTES.md).
    opaque = int(tirx.CallEffectKind.Opaque.value)
    ops: dict[str, Any] = {}
    for name, printer_name in OP_NAMES.items():
        try:
            existing = tvm.ir.Op.get(name)
        except Exception:  # tvm reports an unregistered op name as an error
            existing = None
        # Registering an attribute twice raises: skip what an earlier import did.
        if existing is None or existing.get_attr("TCallEffectKind") is None:
            tvm.ir.register_op_attr(name, "TCallEffectKind", opaque)
        if existing is None or existing.get_attr("TScriptPrinterName") is None:
            tvm.ir.register_op_attr(name, "TScriptPrinterName", printer_name)
        ops[name] = tvm.ir.Op.get(name)
    return ops


_OPS = _register_ops()
_REGION_OP = _OPS["tl.region"]


@dataclass(frozen=True)
class Region:
    """A rectangular tile of a buffer: ``buffer[mins[d] : mins[d] + extents[d]]`` per dim.

    Attributes:
        buffer: the buffer (a TVM buffer Var).
        mins: the first index of the tile in every dim (PrimExprs).
        extents: the tile's size in every dim (PrimExprs).
        access: `ACCESS_READ`, `ACCESS_WRITE` or `ACCESS_READ_WRITE`.
    """

    buffer: Any
    mins: tuple[Any, ...]
    extents: tuple[Any, ...]
    access: int = ACCESS_READ

    @property
    def rank(self) -> int:
        """Number of dims of the region (equal to the buffer's rank)."""
        return len(self.extents)

    @property
    def const_extents(self) -> tuple[int | None, ...]:
        """Extents as Python ints, None where an extent is symbolic."""
        return tuple(const_int(e) for e in self.extents)

    @property
    def dtype(self) -> str:
        """Element dtype of the buffer."""
        return str(self.buffer.ty.dtype)

    @property
    def scope(self) -> str:
        """Storage scope of the buffer (``"global"`` when unset)."""
        return str(self.buffer.ty.storage_scope) or "global"

    @property
    def is_full(self) -> bool:
        """Whether the region covers the whole buffer (all mins 0, extents equal the shape)."""
        shape = tuple(self.buffer.ty.shape)
        return all(const_int(m) == 0 for m in self.mins) and all(
            _same_expr(e, s) for e, s in zip(self.extents, shape, strict=False)
        )


def _same_expr(a: Any, b: Any) -> bool:
    ca, cb = const_int(a), const_int(b)
    if ca is not None and cb is not None:
        return ca == cb
    return bool(tvm_ffi.structural_equal(a, b))


@dataclass(frozen=True)
class CopyOp:
    """``T.copy``: copy the ``src`` tile into the ``dst`` tile (same extents after
    dropping unit dims)."""

    src: Region
    dst: Region
    name = "copy"


@dataclass(frozen=True)
class FillOp:
    """``T.fill`` / ``T.clear``: set every element of ``dst`` to ``value``."""

    dst: Region
    value: Any
    name = "fill"


@dataclass(frozen=True)
class GemmOp:
    """``T.gemm``: ``c (+)= op(a) @ op(b)`` with ``op`` the optional transposes.

    ``M x N`` is the tile of ``c``, ``K`` the reduction extent. With
    ``clear_accum`` the old value of ``c`` is discarded first. ``policy`` is the
    ``GemmWarpPolicy`` value (0 Square, 1 FullRow, 2 FullCol) GPU lowerings split the
    block's warps by.
    """

    a: Region
    b: Region
    c: Region
    transpose_a: bool
    transpose_b: bool
    clear_accum: bool
    M: Any
    N: Any
    K: Any
    policy: int = 0
    name = "gemm"


@dataclass(frozen=True)
class ReduceOp:
    """``T.reduce_<kind>``: reduce ``src`` along ``dim`` into ``dst``.

    ``kind`` is one of `REDUCE_KINDS`. With ``clear`` false the result is folded into
    the old values of ``dst``.
    """

    src: Region
    dst: Region
    dim: int
    kind: str
    clear: bool
    name = "reduce"


@dataclass(frozen=True)
class CumsumOp:
    """``T.cumsum`` / ``T.cummax``: inclusive scan of ``src`` along ``dim`` into ``dst``
    (from the end when ``reverse``); ``kind`` (one of `SCAN_KINDS`) names the combine:
    ``"sum"`` (prefix sums) or ``"max"`` (running maxima). Lowerings take the identity
    and combine from `scan_parts`."""

    src: Region
    dst: Region
    dim: int
    reverse: bool
    kind: str = "sum"
    name = "cumsum"


def scan_parts(kind: str, dtype: str) -> tuple[Any, Any]:
    """The identity (a constant of ``dtype``) and the combine ``f(acc, x)`` of a scan.

    The identity of ``"max"`` is -inf for float dtypes (so -inf inputs scan exactly) and
    the smallest value for integer dtypes.

    Raises:
        ValueError: ``kind`` is not one of `SCAN_KINDS`.
    """
    if kind == "sum":
        return tirx.const(0, dtype), lambda acc, x: acc + x
    if kind == "max":
        if tvm.DataType(dtype).type_code in (tvm.DataTypeCode.FLOAT, tvm.DataTypeCode.BFLOAT):
            identity = tirx.FloatImm(dtype, float("-inf"))
        else:
            identity = tirx.min_value(dtype)
        return identity, tirx.max
    raise ValueError(f"scan_parts: kind must be one of {SCAN_KINDS}, got {kind!r}")


@dataclass(frozen=True)
class AtomicOp:
    """``T.atomic_<kind>``: atomically update ``dst`` with ``value``.

    ``value`` is a `Region` (elementwise over a tile of the same extents) or a
    scalar PrimExpr (``dst`` is then a single element). ``prev`` (scalar updates
    only) is a one-element thread-private region that receives ``dst``'s value from
    just before this update, read and written as one atomic step (TileLang's
    ``return_prev=True``); None when the caller does not want it.

    ``kind`` is one of `ATOMIC_KINDS`. ``or`` (integer dtypes), ``load`` and
    ``store`` update one element with a scalar: ``load`` writes nothing and always
    has a ``prev`` (the loaded value; its ``value`` is an unused 0), ``store``
    writes ``value`` (TileLang's ``T.atomic_load`` / ``T.atomic_store``).
    """

    kind: str
    dst: Region
    value: Any
    prev: Region | None = None
    name = "atomic"


@dataclass(frozen=True)
class PrintOp:
    """``T.print``: print ``value`` (a scalar expression or a `Region`) prefixed by ``msg``."""

    value: Any
    msg: str
    name = "print"


TileOp = CopyOp | FillOp | GemmOp | ReduceOp | CumsumOp | AtomicOp | PrintOp


def region_call(region: Region) -> Any:
    """Encode ``region`` as a ``tl.region(BufferLoad(buf, mins), access, *extents)`` call."""
    load = tirx.BufferLoad(region.buffer, list(region.mins))
    return tirx.call_intrin(
        "handle",
        "tl.region",
        load,
        tirx.IntImm("int32", region.access),
        *region.extents,
    )


def make_call(op_name: str, *args: Any) -> Any:
    """Build a ``tl.<op>`` call; `Region` arguments are encoded with `region_call`."""
    encoded = [region_call(a) if isinstance(a, Region) else a for a in args]
    return tirx.call_intrin("void", op_name, *encoded)


def is_region_call(value: Any) -> bool:
    """Whether ``value`` is a ``tl.region`` call (a tile operand)."""
    return isinstance(value, tvm.ir.Call) and value.op.same_as(_REGION_OP)


def _decode_region(value: Any) -> Region:
    if not is_region_call(value):
        raise ValueError(f"expected a tl.region call, got {value!r}")
    load = value.args[0]
    return Region(
        buffer=load.source,
        mins=tuple(load.indices),
        extents=tuple(value.args[2:]),
        access=int(value.args[1].value),
    )


def _int(value: Any) -> int:
    return int(value.value)


def _flag(value: Any) -> bool:
    return bool(int(value.value))


def is_tile_op(call: Any) -> bool:
    """Whether ``call`` is a call of a tile op (``tl.*`` other than ``tl.region``)."""
    if not isinstance(call, tvm.ir.Call) or not isinstance(call.op, tvm.ir.Op):
        return False
    name = str(call.op.name)
    return name in OP_NAMES and name != "tl.region"


def describe(call: Any) -> TileOp:
    """The typed description of a tile-op call.

    Args:
        call: a ``tvm.ir.Call`` of one of the ``tl.*`` ops.

    Returns:
        the matching frozen dataclass (`CopyOp`, `FillOp`, `GemmOp`, `ReduceOp`,
        `CumsumOp`, `AtomicOp`, `PrintOp`).

    Raises:
        ValueError: ``call`` is not a tile-op call (or is malformed).
    """
    if not is_tile_op(call):
        raise ValueError(f"describe: expected a tl.* tile-op call, got {call!r}")
    name = str(call.op.name)
    args = list(call.args)
    if name == "tl.copy":
        return CopyOp(src=_decode_region(args[0]), dst=_decode_region(args[1]))
    if name == "tl.fill":
        return FillOp(dst=_decode_region(args[0]), value=args[1])
    if name == "tl.gemm":
        return GemmOp(
            a=_decode_region(args[0]),
            b=_decode_region(args[1]),
            c=_decode_region(args[2]),
            transpose_a=_flag(args[3]),
            transpose_b=_flag(args[4]),
            clear_accum=_flag(args[5]),
            M=args[6],
            N=args[7],
            K=args[8],
            policy=int(args[9]) if len(args) > 9 else 0,
        )
    if name == "tl.reduce":
        return ReduceOp(
            src=_decode_region(args[0]),
            dst=_decode_region(args[1]),
            kind=str(args[2].value),
            dim=_int(args[3]),
            clear=_flag(args[4]),
        )
    if name in ("tl.cumsum", "tl.cummax"):
        return CumsumOp(
            src=_decode_region(args[0]),
            dst=_decode_region(args[1]),
            dim=_int(args[2]),
            reverse=_flag(args[3]),
            kind=name[len("tl.cum") :],
        )
    if name.startswith("tl.atomic_"):
        value = _decode_region(args[1]) if is_region_call(args[1]) else args[1]
        prev = _decode_region(args[2]) if len(args) > 2 else None
        return AtomicOp(
            kind=name[len("tl.atomic_") :], dst=_decode_region(args[0]), value=value, prev=prev
        )
    # tl.print is the only op left.
    value = _decode_region(args[0]) if is_region_call(args[0]) else args[0]
    return PrintOp(value=value, msg=str(args[1].value))


def _imm(value: bool | int) -> Any:
    return tirx.IntImm("int32", int(value))


def encode(op: TileOp) -> Any:
    """The ``tl.*`` call of a typed description: ``describe(encode(op)) == op`` field by field.

    Passes that rewrite tile ops (change a region, set ``clear``) build the new call
    with ``encode(dataclasses.replace(op, ...))``.

    Raises:
        TypeError: ``op`` is not one of the tile-op dataclasses.
    """
    if isinstance(op, CopyOp):
        return make_call("tl.copy", op.src, op.dst)
    if isinstance(op, FillOp):
        return make_call("tl.fill", op.dst, op.value)
    if isinstance(op, GemmOp):
        return make_call(
            "tl.gemm",
            op.a,
            op.b,
            op.c,
            _imm(op.transpose_a),
            _imm(op.transpose_b),
            _imm(op.clear_accum),
            op.M,
            op.N,
            op.K,
            tirx.IntImm("int32", int(op.policy)),
        )
    if isinstance(op, ReduceOp):
        return make_call(
            "tl.reduce", op.src, op.dst, tvm.ir.StringImm(op.kind), _imm(op.dim), _imm(op.clear)
        )
    if isinstance(op, CumsumOp):
        if op.kind not in SCAN_KINDS:
            raise TypeError(f"encode: scan kind must be one of {SCAN_KINDS}, got {op.kind!r}")
        return make_call(f"tl.cum{op.kind}", op.src, op.dst, _imm(op.dim), _imm(op.reverse))
    if isinstance(op, AtomicOp):
        if op.kind not in ATOMIC_KINDS:
            raise TypeError(f"encode: atomic kind must be one of {ATOMIC_KINDS}, got {op.kind!r}")
        if op.prev is not None and isinstance(op.value, Region):
            raise TypeError("encode: an atomic returning its previous value updates one element")
        if op.kind in ELEMENT_ATOMIC_KINDS and isinstance(op.value, Region):
            raise TypeError(f"encode: atomic {op.kind} takes a scalar value, got a tile")
        if op.kind == "load" and op.prev is None:
            raise TypeError("encode: an atomic load needs prev (the element receiving the value)")
        prev = () if op.prev is None else (op.prev,)
        return make_call(f"tl.atomic_{op.kind}", op.dst, op.value, *prev)
    if isinstance(op, PrintOp):
        return make_call("tl.print", op.value, tvm.ir.StringImm(op.msg))
    raise TypeError(f"encode: expected a tile-op dataclass, got {type(op).__name__}")


def tile_ops(func: Any) -> list[TileOp]:
    """Every tile op of ``func`` (a PrimFunc or a statement), in program order."""
    body = getattr(func, "body", func)
    found: list[TileOp] = []

    def visit(call: Any) -> None:
        if is_tile_op(call):
            found.append(describe(call))

    tvm_ffi.structural_walk(body, (tvm.ir.Call, visit), order="pre")
    return found


def regions_equal_extents(a: Sequence[Any], b: Sequence[Any]) -> bool:
    """Whether two extent lists are equal after dropping unit dims (constants compared
    by value, symbolic extents structurally)."""
    sa = [e for e in a if const_int(e) != 1]
    sb = [e for e in b if const_int(e) != 1]
    return len(sa) == len(sb) and all(_same_expr(x, y) for x, y in zip(sa, sb, strict=False))
