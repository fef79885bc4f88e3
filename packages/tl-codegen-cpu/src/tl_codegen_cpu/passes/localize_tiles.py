"""`cpu-localize-tiles`: shared, fragment and local tiles become block-local CPU arrays.

On the CPU a block runs on one core, so ``shared``/``shared.dyn`` tiles,
``local.fragment`` tiles and thread-private ``local`` arrays are all plain
arrays allocated inside the grid's parallel loop (one copy per running
block). They get scope ``global``: TVM 0.27's ``LowerTVMBuiltin`` turns small
allocations of any other scope into heap workspaces, which LLVM cannot keep
in registers. Where the arrays live (stack or TVM workspace)
is decided later (`cpu-stack-block-locals` on the C path).

A view of such a tile (``T.reshape``, ``T.view``, ``T.Tensor(shape, dtype, B.data)``,
views of views) moves with it. TVM's ``StorageRewrite`` (the LLVM path) counts only
the accesses that name an allocation as its uses, not those through a
``DeclBuffer`` over its data: a tile last read through a view was taken for dead and
its memory given to a later tile while the view still read it. So a tile whose
views all have constant shapes and its dtype becomes one flat array of its
elements, and every access to it or to a view indexes that array at its row-major
offset (views share one element order), the views' declarations going; a view of
another 32- or 64-bit dtype does the same through a bit cast (``reinterpret``). Any
other view (a narrower or wider dtype, a symbolic shape, a tile named other than by
accesses) stays a view and gets the tile's new scope.

A tile the kernel reads but never writes (named by nothing but its allocation and
loads) reads as zero: the language leaves its values unspecified, and zero is
deterministic where the uninitialized stack array would not be (`zero_unwritten_tiles`).
TileLang issue 1678's kernel reads such a tile at an index held in a local
variable (``tmp_row[j]``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.buffer_views import view_pairs, views_of
from tl_ir import scopes
from tl_ir.builtin_ops import builtin_op_names
from tl_ir.float_division import zero_operands_kept
from tl_ir.ops import const_int
from tl_passes.buffer_rewrite import allocated_buffers, substitute_vars, with_scope
from tl_passes.pass_base import PassContext, PrimFuncPass

#: Calls whose operand names a buffer's memory, not a value read from it.
_ADDRESS_CALLS = builtin_op_names("address_of", "tvm_access_ptr")

#: The kernel-language scopes that become block-local arrays.
BLOCK_LOCAL_SCOPES: tuple[str, ...] = (
    *scopes.SHARED_SCOPES,
    scopes.FRAGMENT,
    *scopes.THREAD_PRIVATE_SCOPES,
)


@dataclass(frozen=True)
class CpuLocalizeTilesPass(PrimFuncPass):
    """Rescope every allocated tile of a `BLOCK_LOCAL_SCOPES` scope to ``global``."""

    name: ClassVar[str] = "cpu-localize-tiles"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its block-local tiles in scope ``global``."""

        return localize_tiles(body)


def _members(buffers: list[Any], buffer: Any) -> bool:
    return any(buffer.same_as(b) for b in buffers)


def _same_bits(view: str, tile: str) -> bool:
    """Whether a view of dtype ``view`` reads a tile of dtype ``tile`` element by element
    (the same dtype, or a bit cast between 32- or 64-bit scalars)."""
    if view == tile:
        return True
    a, b = tvm.DataType(view), tvm.DataType(tile)
    return a.lanes == 1 and b.lanes == 1 and a.bits == b.bits and a.bits in (32, 64)


def _const_shape(buffer: Any) -> list[int] | None:
    shape = [const_int(extent) for extent in buffer.ty.shape]
    return None if any(extent is None for extent in shape) else [int(e or 0) for e in shape]


def _flat_index(indices: list[Any], shape: list[int]) -> Any:
    flat: Any = None
    for index, extent in zip(indices, shape, strict=True):
        flat = index if flat is None else flat * extent + index
    return flat


def _flatten_viewed_tile(body: tirx.Stmt, tile: Any, views: list[Any]) -> tirx.Stmt | None:
    """``body`` with ``tile`` and its ``views`` one flat array (module doc), or None when
    a view has a symbolic shape or a dtype that is neither the tile's nor one of the
    same width (32 or 64 bits: its accesses become bit casts), or a buffer of them is
    named otherwise than by a load, a store, its allocation or a view's declaration."""
    group = [tile, *views]
    shapes = [_const_shape(b) for b in group]
    if any(shape is None for shape in shapes):
        return None
    if not all(_same_bits(str(b.ty.dtype), str(tile.ty.dtype)) for b in views):
        return None
    size = math.prod(shapes[0] or [])
    flat = tirx.decl_buffer(
        (size,),
        str(tile.ty.dtype),
        name=str(tile.name),
        scope=scopes.GLOBAL,
        data_alignment=max(int(tile.data_alignment), 64),
    )

    def shape_of(buffer: Any) -> list[int] | None:
        for b, shape in zip(group, shapes, strict=True):
            if buffer.same_as(b):
                return shape
        return None

    dtype = str(tile.ty.dtype)

    def load(node: Any) -> Any:
        shape = shape_of(node.source)
        if shape is None or len(node.indices) != len(shape):
            return node
        value = tirx.BufferLoad(flat, [_flat_index(list(node.indices), shape)])
        view_dtype = str(node.source.ty.dtype)
        return value if view_dtype == dtype else tirx.reinterpret(view_dtype, value)

    def store(node: Any) -> Any:
        shape = shape_of(node.buffer)
        if shape is None or len(node.indices) != len(shape):
            return node
        value = node.value
        if str(node.buffer.ty.dtype) != dtype:
            value = tirx.reinterpret(dtype, value)
        return tirx.BufferStore(flat, value, [_flat_index(list(node.indices), shape)])

    def declaration(node: Any) -> Any:
        if _members(views, node.buffer):
            return tirx.Evaluate(tirx.const(0, "int32"))
        return node

    rewritten = tvm_ffi.structural_map(
        body,
        [(tvm.ir.TensorLoad, load), (tirx.BufferStore, store), (tirx.DeclBuffer, declaration)],
        order="post",
    )
    mentions = [0]

    def count(var: Any) -> None:
        if _members(group, var):
            mentions[0] += 1

    tvm_ffi.structural_walk(rewritten, (tvm.ir.Var, count), order="pre")
    if mentions[0] != 1:  # the allocation only
        return None
    return substitute_vars(rewritten, {tile: flat})


def _zero(dtype: str) -> Any:
    """The zero of ``dtype`` (a vector dtype: broadcast)."""
    scalar = tvm.DataType(dtype)
    zero = tirx.const(0, str(scalar.with_lanes(1)))
    return zero if scalar.lanes == 1 else tirx.Broadcast(zero, int(scalar.lanes))


def _mentions(body: tirx.Stmt, buffer: Any) -> int:
    count = [0]

    def visit(var: Any) -> None:
        if var.same_as(buffer):
            count[0] += 1

    tvm_ffi.structural_walk(body, (tvm.ir.Var, visit), order="pre")
    return count[0]


def _address_taken(body: tirx.Stmt) -> set[int]:
    """Object handles of the buffers an ``address_of`` / ``tvm_access_ptr`` names: a
    call given the pointer (a lowered ``T.gemm``'s ``tl_gemm_*`` into its accumulator)
    may write them without a store."""
    taken: set[int] = set()

    def name(node: Any) -> None:
        if isinstance(node, tvm.ir.TensorLoad):
            taken.add(node.source.__chandle__())
        elif isinstance(node, tvm.ir.Var):
            taken.add(node.__chandle__())

    def call(node: Any) -> None:
        if isinstance(node.op, tvm.ir.Op) and str(node.op.name) in _ADDRESS_CALLS:
            tvm_ffi.structural_walk(node, name, order="pre")

    tvm_ffi.structural_walk(body, (tvm.ir.Call, call), order="pre")
    return taken


def zero_unwritten_tiles(body: tirx.Stmt) -> tirx.Stmt:
    """``body`` with every load of a never-written allocated buffer replaced by zero.

    A buffer counts as never written when, its loads replaced, only its allocation
    names it: no store, view, address or call reaches it. Its allocation stays. An
    address's operand is a load too (``address_of(acc[0, 0])``), so a buffer whose
    address is taken is left alone before its loads are looked at.
    """
    # Object handles of the buffers stored to, or whose address a call may write through.
    stored = _address_taken(body)
    tvm_ffi.structural_walk(body, (tirx.BufferStore, lambda s: stored.add(s.buffer.__chandle__())))
    # Most tiles are written: only the others are worth a rewrite of the whole body.
    for tile in allocated_buffers(body):
        if tile.__chandle__() in stored:
            continue
        replaced = [0]

        def load(node: Any, tile: Any = tile, replaced: list[int] = replaced) -> Any:
            if not node.source.same_as(tile):
                return node
            replaced[0] += 1
            return _zero(str(node.ty.dtype))

        candidate = tvm_ffi.structural_map(body, (tvm.ir.TensorLoad, load), order="post")
        if replaced[0] and _mentions(candidate, tile) == 1:  # the allocation only
            body = candidate
    # A float divisor read from such a tile is now the constant 0, which TVM's folder
    # (and IR printer) refuses: written as its IEEE result.
    return zero_operands_kept(body)


def localize_tiles(body: tirx.Stmt) -> tirx.Stmt:
    """``body`` with its `BLOCK_LOCAL_SCOPES` tiles, and the views of them, in ``global``
    (a tile with views a flat array, see the module doc), and loads of never-written
    buffers zero (`zero_unwritten_tiles`)."""
    body = zero_unwritten_tiles(body)
    views = view_pairs(body)
    for tile in allocated_buffers(body):
        if str(tile.ty.storage_scope) not in BLOCK_LOCAL_SCOPES:
            continue
        group = views_of(tile, views)
        if group:
            body = _flatten_viewed_tile(body, tile, group) or body
    mapping: dict[Any, Any] = {}
    views = view_pairs(body)
    for tile in allocated_buffers(body):
        if str(tile.ty.storage_scope) not in BLOCK_LOCAL_SCOPES:
            continue
        mapping[tile] = with_scope(tile, scopes.GLOBAL)
        for view in views_of(tile, views):
            if str(view.ty.storage_scope) != scopes.GLOBAL:
                mapping[view] = with_scope(view, scopes.GLOBAL)
    return substitute_vars(body, mapping)
