"""`cpu-lower-tile-ops`: every Tier 1 tile op becomes loops over block-local arrays.

Each ``tl.*`` call statement is replaced by the statement of its emitter:

=================  ==========================================================
``T.copy``         `emit_tile_copy` with ``pad_value=0``: out-of-bounds source
                   elements read as zero, out-of-bounds destination elements
                   are not written; the innermost loop is vectorized
``T.fill/clear``   `emit_tile_fill`
``T.gemm``         `emit_tile_gemm` (fp16/bf16 operands widened to fp32 tiles
                   first), then `emit_gemm_microkernel` over the whole tiles (register
                   tiles chosen by tile shape and dtype; on target ``c`` the
                   GCC vector-extension style), after a fill when
                   ``clear_accum``
``T.reduce_*``     `emit_tile_reduce` (any dim, ``clear`` or fold; along the
                   innermost dim of a full tile, vector-wide partial results)
``T.cumsum``       `emit_tile_cumsum`
``T.atomic_*``     `emit_tile_atomic` (real CPU atomics, blocks run concurrently;
                   a plain update on a block-local buffer)
``T.print``        a ``printf`` per element with the message
=================  ==========================================================

Tile extents must be compile-time constants (the front end has already expanded a
bounded run-time extent of a copy or fill, `tl_ir.run_time_tiles`); a symbolic extent
raises `tl_ir.run_time_tiles.run_time_extent_error`'s `UnsupportedError`, a negative
one a ``ValueError``.

A tile with an extent of 0 (``T.fill(x[a:b], v)`` where ``a == b`` is known at compile
time, TileLang issue 1008) has no element: an op over it lowers to nothing
(`lower_empty_tile_op`), as on the GPU. Two ops still write a result: a ``T.gemm``
with ``K == 0`` and ``clear_accum`` clears ``C``, and a clearing ``T.reduce_*`` over an
empty reduced dimension fills ``dst`` with the reduction's identity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.atomics import emit_tile_atomic
from tl_codegen_cpu.lowering.gemm_microkernel import GemmOperand
from tl_codegen_cpu.lowering.gemm_operands import emit_tile_gemm
from tl_codegen_cpu.lowering.tile_emitters import (
    TileRegion,
    emit_tile_copy,
    emit_tile_cumsum,
    emit_tile_fill,
    emit_tile_reduce,
    reduce_identity,
)
from tl_codegen_cpu.lowering.vector_isa import VectorISA, vector_isa_for_target
from tl_ir import scopes
from tl_ir.errors import UnsupportedError
from tl_ir.ops import (
    AtomicOp,
    CopyOp,
    CumsumOp,
    FillOp,
    GemmOp,
    PrintOp,
    ReduceOp,
    Region,
    TileOp,
    const_int,
    describe,
    is_tile_op,
)
from tl_ir.run_time_tiles import run_time_extent_error
from tl_passes.pass_base import PassContext, PrimFuncPass

#: ``gemm_style`` values: ``auto`` picks ``c-vector-extension`` for target ``c``.
GEMM_STYLES: tuple[str, ...] = ("auto", "tir", "c-vector-extension")


def _extents(region: Region, what: str) -> list[int]:
    """The compile-time extents of ``region`` (``what`` names the op in errors).

    Raises:
        UnsupportedError: a symbolic extent.
        ValueError: a negative extent.
    """
    extents = []
    for extent in region.extents:
        value = const_int(extent)
        if value is None:
            raise run_time_extent_error(what, str(region.buffer.name), extent)
        if value < 0:
            raise ValueError(
                f"{what}: tile {region.buffer.name} has the negative extent {value} "
                "(a slice whose end is before its start?)"
            )
        extents.append(value)
    return extents


def _tile(region: Region, what: str) -> TileRegion:
    return TileRegion(region.buffer, tuple(region.mins), tuple(_extents(region, what)))


def _nothing() -> tirx.Stmt:
    return tirx.Evaluate(tirx.const(0, "int32"))


def _regions(op: TileOp) -> list[tuple[str, Region]]:
    """The tiles of ``op``, each with the op's name for errors (none for a gemm, whose
    empty cases `lower_tile_op` reads from ``M``, ``N`` and ``K``)."""
    if isinstance(op, CopyOp):
        return [("T.copy", op.src), ("T.copy", op.dst)]
    if isinstance(op, FillOp):
        return [("T.fill", op.dst)]
    if isinstance(op, ReduceOp):
        return [("T.reduce", op.src), ("T.reduce", op.dst)]
    if isinstance(op, CumsumOp):
        return [(f"T.cum{op.kind}", op.src), (f"T.cum{op.kind}", op.dst)]
    if isinstance(op, AtomicOp):
        where = f"T.atomic_{op.kind}"
        tiles = [(where, op.dst)]
        tiles += [(where, op.value)] if isinstance(op.value, Region) else []
        return tiles + ([(where, op.prev)] if op.prev is not None else [])
    if isinstance(op, PrintOp) and isinstance(op.value, Region):
        return [("T.print", op.value)]
    return []


def lower_empty_tile_op(op: TileOp) -> tirx.Stmt | None:
    """The statement of a copy, fill, reduce, scan, atomic or print ``op`` one of whose
    tiles is empty (an extent of 0), or None when none is (see the module docstring).

    Raises:
        UnsupportedError: a symbolic extent.
        ValueError: a negative extent, or a copy between an empty and a non-empty tile.
    """
    tiles = [(where, region, _extents(region, where)) for where, region in _regions(op)]
    if not any(0 in extents for _, _, extents in tiles):
        return None
    if isinstance(op, CopyOp):
        (_, src, src_extents), (_, dst, dst_extents) = tiles
        if [e for e in src_extents if e != 1] != [e for e in dst_extents if e != 1]:
            raise ValueError(
                f"T.copy: the tile shapes must match (ignoring extents of 1); src "
                f"{src.buffer.name}{src_extents} vs dst {dst.buffer.name}{dst_extents}"
            )
    if isinstance(op, ReduceOp) and op.clear:
        src_extents = tiles[0][2]
        rank = len(src_extents)
        if -rank <= op.dim < rank:
            dim = op.dim % rank
            if 0 not in src_extents[:dim] + src_extents[dim + 1 :]:
                # Only the reduced dimension is empty: every result reduces no element.
                result = _tile(op.dst, "T.reduce")
                identity = reduce_identity(op.kind, str(result.buffer.dtype))
                return emit_tile_fill(result, identity)
    return _nothing()


def _print_call(text: str, values: list[Any]) -> tirx.Stmt:
    # TVM's C printer cannot pass a string constant, so the format string is a
    # block-local char array filled in place (printing is for debugging).
    data = text.encode("utf-8") + b"\0"
    fmt = tirx.decl_buffer((len(data),), "int8", name="print_format", scope=scopes.GLOBAL)
    fill = [
        tirx.BufferStore(fmt, tirx.const(byte if byte < 128 else byte - 256, "int8"), [i])
        for i, byte in enumerate(data)
    ]
    address = tirx.address_of(tirx.BufferLoad(fmt, [0]))
    if not values:
        call = tirx.Evaluate(tirx.call_extern("int32", "printf", address))
        return tirx.SeqStmt([tirx.AllocBuffer(fmt), *fill, call])
    *indices, value = values
    if str(value.ty.dtype) == "float64":
        # Not printf itself: TVM's LLVM code calls it as a non-variadic function, and a
        # double then arrives as garbage (include/tl_print.h).
        count = tirx.const(len(indices), "int32")
        padded = [tirx.Cast("int64", i) for i in indices]
        padded += [tirx.const(0, "int64")] * (_PRINTED_INDICES - len(indices))
        call = tirx.Evaluate(
            tirx.call_extern("int32", "tl_print_f64", address, count, *padded, value)
        )
    else:
        call = tirx.Evaluate(tirx.call_extern("int32", "printf", address, *values))
    return tirx.SeqStmt([tirx.AllocBuffer(fmt), *fill, call])


#: The most tile indices ``tl_print_f64`` prints with a float element.
_PRINTED_INDICES = 8


def _printable(value: Any) -> tuple[str, Any]:
    dtype = str(value.ty.dtype)
    if "float" in dtype:
        return "%g", tirx.Cast("float64", value)
    if dtype.startswith("uint"):
        return "%llu", tirx.Cast("uint64", value)
    return "%lld", tirx.Cast("int64", value)


def _flushed(stmt: tirx.Stmt) -> tirx.Stmt:
    # fflush(NULL): the output appears even when stdout is a pipe and the process crashes.
    null = tirx.reinterpret("handle", tirx.const(0, "uint64"))
    flush = tirx.Evaluate(tirx.call_extern("int32", "fflush", null))
    return tirx.SeqStmt([stmt, flush])


def _print_stmt(op: PrintOp) -> tirx.Stmt:
    # The message is printf's format text: a "%" in it is written "%%".
    msg = op.msg.replace("%", "%%")
    if isinstance(op.value, tvm.ir.StringImm):  # T.print(msg=...): the message alone
        return _flushed(_print_call(msg + "\n", []))
    prefix = f"{msg}: " if msg else ""
    if not isinstance(op.value, Region):
        spec, value = _printable(op.value)
        return _flushed(_print_call(f"{prefix}{spec}\n", [value]))
    tile = _tile(op.value, "T.print")
    loop_vars = [tirx.Var(f"p{d}", "int32") for d in range(len(tile.extents))]
    index = tile.full_index(loop_vars)
    spec, value = _printable(tirx.BufferLoad(tile.buffer, index))
    if len(index) > _PRINTED_INDICES:
        raise NotImplementedError(
            f"T.print: printing a tile of more than {_PRINTED_INDICES} dims is not "
            f"supported, got {tile.buffer.name} with {len(index)}; print a slice"
        )
    where = ", ".join("%lld" for _ in index)
    text = f"{prefix}{tile.buffer.name}[{where}] = {spec}\n"
    body = _print_call(text, [*(tirx.Cast("int64", i) for i in index), value])
    for var, extent in reversed(list(zip(loop_vars, tile.extents, strict=True))):
        body = tirx.For(var, 0, extent, tirx.ForKind.SERIAL, body)
    return _flushed(body)


def lower_tile_op(op: TileOp, *, isa: VectorISA, gemm_style: str) -> tirx.Stmt:
    """Return the CPU statement for one tile op (see the module docstring).

    Raises:
        UnsupportedError: a symbolic tile extent.
        ValueError: a negative extent, mismatched tile shapes or unsupported dtypes (from
            the emitters).
    """
    if not isinstance(op, GemmOp):
        empty = lower_empty_tile_op(op)
        if empty is not None:
            return empty
    if isinstance(op, CopyOp):
        return emit_tile_copy(_tile(op.src, "T.copy"), _tile(op.dst, "T.copy"), pad_value=0)
    if isinstance(op, FillOp):
        return emit_tile_fill(_tile(op.dst, "T.fill"), op.value)
    if isinstance(op, GemmOp):
        sizes = [const_int(v) for v in (op.M, op.N, op.K)]
        if any(s is None for s in sizes):
            raise UnsupportedError("T.gemm: M, N and K must be compile-time constants")
        m, n, k = (int(s) for s in sizes if s is not None)
        if m == 0 or n == 0 or (k == 0 and not op.clear_accum):
            return _nothing()  # C has no element, or nothing is added to it
        if k == 0:
            return emit_tile_fill(_tile(op.c, "T.gemm"), 0)  # an empty sum: C = 0
        a, b, c = (_tile(r, "T.gemm") for r in (op.a, op.b, op.c))
        micro = emit_tile_gemm(
            GemmOperand(a.buffer, a.offset),
            GemmOperand(b.buffer, b.offset),
            GemmOperand(c.buffer, c.offset),
            m,
            n,
            k,
            transpose_a=op.transpose_a,
            transpose_b=op.transpose_b,
            isa=isa,
            style=gemm_style,
        )
        if not op.clear_accum:
            return micro
        return tirx.SeqStmt([emit_tile_fill(c, 0), micro])
    if isinstance(op, ReduceOp):
        dst = _tile(op.dst, "T.reduce")
        return emit_tile_reduce(
            _tile(op.src, "T.reduce"),
            dst,
            op.dim,
            op.kind,
            op.clear,
            lanes=isa.lanes(str(dst.buffer.dtype)),
        )
    if isinstance(op, CumsumOp):
        where = f"T.cum{op.kind}"
        return emit_tile_cumsum(
            _tile(op.src, where), _tile(op.dst, where), op.dim, op.reverse, op.kind
        )
    if isinstance(op, AtomicOp):
        value = _tile(op.value, "T.atomic") if isinstance(op.value, Region) else op.value
        prev = None if op.prev is None else _tile(op.prev, f"T.atomic_{op.kind}")
        return emit_tile_atomic(_tile(op.dst, f"T.atomic_{op.kind}"), value, op.kind, prev=prev)
    if isinstance(op, PrintOp):
        return _print_stmt(op)
    raise UnsupportedError(f"cpu-lower-tile-ops: no CPU lowering for {type(op).__name__}")


def lower_tile_ops(stmt: tirx.Stmt, *, isa: VectorISA, gemm_style: str, where: str) -> tirx.Stmt:
    """Return ``stmt`` with every tile-op statement replaced by its CPU loops.

    Raises:
        UnsupportedError, ValueError: see `lower_tile_op` (the first problem found).
    """
    problems: list[Exception] = []

    def rewrite(evaluate: tirx.Evaluate) -> tirx.Stmt:
        if not is_tile_op(evaluate.value):
            return evaluate
        try:
            return lower_tile_op(describe(evaluate.value), isa=isa, gemm_style=gemm_style)
        except (UnsupportedError, ValueError, TypeError) as error:
            problems.append(error)
            return evaluate

    # Exceptions raised inside structural_map callbacks come back as RuntimeError,
    # so they are collected and re-raised here.
    result = tvm_ffi.structural_map(stmt, (tirx.Evaluate, rewrite), order="post")
    if problems:
        first = problems[0]
        if isinstance(first, UnsupportedError):
            raise UnsupportedError(f"{where}: {first.message}") from first
        raise type(first)(f"{where}: {first}") from first
    return result


@dataclass(frozen=True)
class CpuLowerTileOpsPass(PrimFuncPass):
    """Lower every tile op for the CPU (see the module docstring).

    Args:
        gemm_style: micro-kernel style, one of `GEMM_STYLES` (``auto``: by target kind).
    """

    name: ClassVar[str] = "cpu-lower-tile-ops"
    gemm_style: str = "auto"

    def __post_init__(self) -> None:
        if self.gemm_style not in GEMM_STYLES:
            raise ValueError(
                f"cpu-lower-tile-ops gemm_style: expected one of {list(GEMM_STYLES)}, "
                f"got {self.gemm_style!r}"
            )

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its tile ops lowered.

        Raises:
            UnsupportedError, ValueError: a tile op that cannot be lowered.
        """
        target = ctx.target
        style = self.gemm_style
        if style == "auto":
            is_c = target is not None and str(target.kind.name) == "c"
            style = "c-vector-extension" if is_c else "tir"
        isa = vector_isa_for_target(target)
        return lower_tile_ops(body, isa=isa, gemm_style=style, where=self.where(function_name))
