"""XOR-swizzled shared tiles: `gpu-choose-shared-layouts` and `gpu-swizzle-shared`.

A shared tile whose rows (its last dim) are ``C`` 16-byte chunks long can be
stored with each row's chunks permuted by an XOR of the row number, so that
the 8 rows an ``ldmatrix`` reads at one column (8 lanes, 16 bytes each), and a
warp's 16-byte stores along rows, fall into 8 different 16-byte bank groups of
the 128-byte bank line. Element ``(..., r, c)`` (``E`` elements per chunk)
moves to column ``(chunk ^ key(r)) * E + c % E`` with ``chunk = c // E`` and

* ``key(r) = r % 8`` when ``C`` is a multiple of 8 (a row fills whole bank
  lines; the low three chunk bits are permuted);
* ``key(r) = (r // (8 // C)) % C`` when ``C`` is 2 or 4 (``8 // C`` rows share
  a bank line; each group of them gets its own permutation).

Chunks stay whole, so a 16-byte (or narrower, aligned) vector access or
``cp.async`` of the row-major tile is one contiguous access of the swizzled
one, and an ``ldmatrix`` row address ``&S[..., r, 8k]`` stays a row. Rows of
one chunk, or not a power of two (2, 4) or multiple of 8 chunks, are not
swizzled. Leading dims (a pipeline ring's stage) are left alone: the swizzle
acts within each ``R x C`` slice.

`gpu-choose-shared-layouts` (on the tile program) picks the tiles: where the
backend's `GpuTraits.swizzled_operands` is available for the target, every
shared ``T.gemm`` A/B operand of a listed element width; and, on such
backends, every tile ``T.annotate_layout`` gives ``make_swizzled_layout``
(``full_bank``/``half_bank``/``quarter_bank`` when the row is 128/64/32 bytes;
another row width is a `NotImplementedError`), minus the tiles annotated
``make_linear_layout``. The choice is recorded in the function attribute
`SWIZZLE_ATTR` (buffer name -> chunks per row). `gpu-swizzle-shared` (after
`gpu-lower-tile-ops`) rewrites every index of those tiles: loads, stores,
vector ramps and ``address_of`` operands alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir import scopes
from tl_passes.gpu.errors import GpuLoweringError
from tl_passes.gpu.tir_build import const_int
from tl_passes.gpu.traits import PORTABLE_TRAITS, GpuTraits
from tl_passes.pass_base import PassContext, PrimFuncPass

#: Function attribute: swizzled shared tiles, buffer name -> 16-byte chunks per row.
SWIZZLE_ATTR = "tl.gpu_shared_swizzle"
#: ``T.annotate_layout`` kinds (tl_ir) and the row widths, in chunks, they stand for.
_BANK_KINDS = {"full_bank": 8, "half_bank": 4, "quarter_bank": 2}
CHUNK_BYTES = 16


def row_chunks(shape: Any, dtype: str) -> int | None:
    """16-byte chunks per row of a shared tile of ``shape`` and ``dtype`` when its rows
    can be swizzled (2 or 4 chunks, or a multiple of 8; at least two dims), else None."""
    if len(shape) < 2:
        return None
    inner = const_int(shape[-1])
    bits = int(tvm.DataType(dtype).bits)
    if inner is None or bits == 0 or (inner * bits) % (CHUNK_BYTES * 8):
        return None
    chunks = inner * bits // (CHUNK_BYTES * 8)
    if chunks in (2, 4) or (chunks >= 8 and chunks % 8 == 0):
        return chunks
    return None


def swizzle_key(row: Any, chunks: int) -> Any:
    """The XOR key of ``row`` for rows of ``chunks`` chunks (module docstring)."""
    if chunks >= 8:
        return tirx.floormod(row, 8)
    return tirx.floormod(tirx.floordiv(row, 8 // chunks), chunks)


def swizzled_column(row: Any, column: Any, chunks: int, elements_per_chunk: int) -> Any:
    """The column where element ``(row, column)`` lives in the swizzled tile."""
    e = elements_per_chunk
    chunk = tirx.floordiv(column, e)
    moved = tirx.bitwise_xor(chunk, swizzle_key(row, chunks))
    return moved * e + tirx.floormod(column, e)


def swizzled_index(indices: Any, chunks: int, dtype: str) -> list[Any]:
    """``indices`` of an access (scalar, or a ramp along the last dim) remapped.

    Raises:
        GpuLoweringError: a vector access that is wider than a chunk, or not along
            the last dim (a swizzle would split it).
    """
    bits = int(tvm.DataType(dtype).bits)
    e = CHUNK_BYTES * 8 // bits
    *lead, row, column = list(indices)
    if isinstance(row, tirx.Ramp):
        raise GpuLoweringError("a vector access across the rows of a swizzled shared tile")
    if isinstance(column, tirx.Ramp):
        lanes = int(column.lanes)
        stride = const_int(column.stride)
        if stride != 1 or lanes * bits > CHUNK_BYTES * 8:
            raise GpuLoweringError(
                f"a {lanes}-lane vector access (stride {column.stride}) of a swizzled shared "
                "tile: expected at most 16 contiguous bytes"
            )
        base = swizzled_column(row, column.base, chunks, e)
        return [*lead, row, tirx.Ramp(base, column.stride, lanes)]
    return [*lead, row, swizzled_column(row, column, chunks, e)]


def _gemm_operands(body: Any) -> list[Any]:
    from tl_ir import ops as tile

    found: list[Any] = []

    def visit(call: Any) -> None:
        if tile.is_tile_op(call):
            op = tile.describe(call)
            if isinstance(op, tile.GemmOp):
                found.extend([op.a.buffer, op.b.buffer])

    tvm_ffi.structural_walk(body, (tvm.ir.Call, visit), order="pre")
    return found


def _shared_buffers(body: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}

    def visit(alloc: Any) -> None:
        if str(alloc.buffer.ty.storage_scope) in scopes.SHARED_SCOPES:
            found.setdefault(str(alloc.buffer.name), alloc.buffer)

    tvm_ffi.structural_walk(body, (tirx.AllocBuffer, visit), order="pre")
    return found


def choose_swizzles(func: Any, traits: GpuTraits, target: Any | None) -> dict[str, int]:
    """Shared tile name -> chunks per row for the tiles to swizzle (module docstring).

    Raises:
        NotImplementedError: an annotated bank swizzle whose row width does not match.
    """
    from tl_ir.frontend import SHARED_LAYOUTS_ATTR

    operands = traits.swizzled_operands_for(target)
    if traits.swizzled_operands is None:
        return {}
    annotated: dict[str, str] = {}
    if func.attrs is not None and SHARED_LAYOUTS_ATTR in func.attrs:
        annotated = {str(k): str(v) for k, v in func.attrs[SHARED_LAYOUTS_ATTR].items()}
    shared = _shared_buffers(func.body)
    chosen: dict[str, int] = {}
    if operands is not None:
        for buffer in _gemm_operands(func.body):
            name = str(buffer.name)
            if name not in shared or int(tvm.DataType(str(buffer.ty.dtype)).bits) not in (
                operands.dtype_bits
            ):
                continue
            chunks = row_chunks(buffer.shape, str(buffer.ty.dtype))
            if chunks is not None:
                chosen[name] = chunks
    for name, kind in annotated.items():
        buffer = shared.get(name)
        if buffer is None:
            continue
        if kind == "linear":
            chosen.pop(name, None)
            continue
        chunks = row_chunks(buffer.shape, str(buffer.ty.dtype))
        if kind == "swizzled":
            if chunks is not None:
                chosen[name] = chunks
        elif kind in _BANK_KINDS:
            wanted = _BANK_KINDS[kind]
            if chunks is None or (chunks != wanted and not (wanted == 8 and chunks % 8 == 0)):
                raise NotImplementedError(
                    f"T.annotate_layout({name}: make_{kind}_swizzled_layout): expects rows of "
                    f"{wanted * CHUNK_BYTES} bytes, got {list(buffer.shape)} "
                    f"{buffer.ty.dtype}"
                )
            chosen[name] = chunks
    return chosen


def apply_swizzles(body: Any, chosen: dict[str, int]) -> Any:
    """``body`` with every access of the ``chosen`` shared tiles remapped."""
    if not chosen:
        return body
    shared = {n: b for n, b in _shared_buffers(body).items() if n in chosen}

    def target(buffer: Any) -> int | None:
        name = str(buffer.name)
        if name in shared and buffer.same_as(shared[name]):
            return chosen[name]
        return None

    def remap(node: Any) -> Any:
        if isinstance(node, tvm.ir.TensorLoad):
            chunks = target(node.source)
            if chunks is not None:
                dtype = str(node.source.ty.dtype)
                return tirx.BufferLoad(node.source, swizzled_index(node.indices, chunks, dtype))
        elif isinstance(node, tirx.BufferStore):
            chunks = target(node.buffer)
            if chunks is not None:
                dtype = str(node.buffer.ty.dtype)
                index = swizzled_index(node.indices, chunks, dtype)
                return tirx.BufferStore(node.buffer, node.value, index)
        return node

    refused: list[GpuLoweringError] = []

    def guarded(node: Any) -> Any:
        # An exception raised inside structural_map reaches us as a RuntimeError.
        try:
            return remap(node)
        except GpuLoweringError as exc:
            refused.append(exc)
            return node

    result = tvm_ffi.structural_map(body, guarded, order="post")
    if refused:
        raise refused[0]
    return result


@dataclass(frozen=True)
class GpuChooseSharedLayoutsPass(PrimFuncPass):
    """Record which shared tiles get the XOR swizzle (`SWIZZLE_ATTR`; module docstring).

    Args:
        traits: the backend's traits (``swizzled_operands``).
    """

    name: ClassVar[str] = "gpu-choose-shared-layouts"
    traits: GpuTraits = field(default=PORTABLE_TRAITS)

    def transform_function(
        self, func: tirx.PrimFunc, function_name: str, ctx: PassContext
    ) -> tirx.PrimFunc:
        """``func`` with `SWIZZLE_ATTR` set when a tile is swizzled.

        Raises:
            NotImplementedError: an annotated swizzle this pass cannot give (named).
        """
        try:
            chosen = choose_swizzles(func, self.traits, ctx.target)
        except NotImplementedError as exc:
            raise NotImplementedError(f"{self.where(function_name)}: {exc}") from exc
        if not chosen:
            return func
        return func.with_attr(SWIZZLE_ATTR, {k: tirx.IntImm("int32", v) for k, v in chosen.items()})


@dataclass(frozen=True)
class GpuSwizzleSharedPass(PrimFuncPass):
    """Remap every index of the tiles `GpuChooseSharedLayoutsPass` chose (module docstring)."""

    name: ClassVar[str] = "gpu-swizzle-shared"

    def transform_function(
        self, func: tirx.PrimFunc, function_name: str, ctx: PassContext
    ) -> tirx.PrimFunc:
        """``func`` with its swizzled tiles' accesses remapped.

        Raises:
            GpuLoweringError: an access a swizzle would split (named).
        """
        if func.attrs is None or SWIZZLE_ATTR not in func.attrs:
            return func
        chosen = {str(k): int(v) for k, v in func.attrs[SWIZZLE_ATTR].items()}
        try:
            return func.with_body(apply_swizzles(func.body, chosen))
        except GpuLoweringError as exc:
            raise GpuLoweringError(f"{self.where(function_name)}: {exc}") from exc
