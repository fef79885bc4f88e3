"""`cpu-interchange-grid-rows`: an elementwise grid walks whole rows, not one tile at a time.

TileLang's elementwise programs cut a 2-D tensor into ``block_M x block_N`` tiles, one
block each::

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M)) as (bx, by):
        ...  # (staging forwarded by cpu-forward-copies:)
        for i, j in T.Parallel(block_M, block_N):
            C[by * block_M + i, bx * block_N + j] = A[...] + B[...]

On the CPU the grid is one loop over the blocks (``bx`` fastest), so each block walks
``block_M`` rows of every operand, ``block_N`` elements at a time: a 32 x 32 fp32 tile
touches 32 rows x 128 bytes of each of three tensors, 96 short streams the hardware
prefetcher cannot follow (TileLang's elementwise add ran at 2.5-2.9x numpy's ``a + b``,
1.7x after this pass, on this machine). Here the grid's
innermost axis moves inside the tile's row loop::

    for (by, i) in parallel:        # one task per row of the tensor
        for bx:                     # the row, block after block: contiguous
            for j in T.Parallel(block_N):
                C[by * block_M + i, bx * block_N + j] = ...

Every (block, element) iteration is independent: blocks of a grid run in any order and
concurrently (a block reading what another writes is a race on the GPU too), and a
``T.Parallel`` nest declares its iterations independent. So any order computes the same
result, bit for bit.

Conditions (else the grid loop is left alone): a parallel grid loop over a flattened
``block_id`` whose body is (after an in-bounds test the analyzer proves for every block)
a perfect nest of ``T.Parallel`` loops from 0 with constant extents around stores only
(no allocation, no call with effects); the body reads the block index only through
``block_id % c`` and ``block_id // c`` for one constant ``c`` that divides the grid
(``c`` is the grid's ``x`` extent); and every access, loads and stores, walks memory
contiguously across the move: its last index is ``c_x * bx + j + ...`` with ``j`` the
innermost loop and ``c_x`` that loop's extent (block ``bx + 1``'s row continues block
``bx``'s), its other indices free of both. Runs before `cpu-lower-tile-ops`, on both
kinds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import sym, tirx

from tl_codegen_cpu.passes.mark_independent_loops import PURE_CALLS
from tl_ir.launch import LOOP_KIND_KEY, rebuild_loop
from tl_ir.ops import const_int
from tl_passes.buffer_rewrite import substitute_vars
from tl_passes.pass_base import PassContext, PrimFuncPass


def _parallel_nest_loop(node: Any) -> bool:
    """A ``T.Parallel`` loop (serial kind, parallel mark, nothing else) from 0, constant extent."""
    if not isinstance(node, tirx.For) or node.kind != tirx.ForKind.SERIAL:
        return False
    annotations = dict(node.annotations.items()) if node.annotations else {}
    return (
        str(annotations.pop(LOOP_KIND_KEY, "")) == "parallel"
        and not annotations
        and const_int(node.min) == 0
        and const_int(node.extent) is not None
    )


def _stores(node: Any) -> list[Any] | None:
    """The stores of a body made of stores only, else None."""
    parts = list(node.seq) if isinstance(node, tirx.SeqStmt) else [node]
    if not all(isinstance(p, tirx.BufferStore) for p in parts):
        return None
    return parts


def _pure(stores: list[Any]) -> bool:
    """No call in the stored values but pure math (an atomic, a print, an extern: no)."""
    calls: list[Any] = []
    for store in stores:
        tvm_ffi.structural_walk(store.value, (tvm.ir.Call, calls.append), order="post")
    return all(isinstance(c.op, tvm.ir.Op) and c.op.name in PURE_CALLS for c in calls)


def _block_divisors(body: Any, block: Any) -> set[int] | None:
    """The constants ``c`` of every ``block % c`` / ``block // c`` in ``body``; None if
    ``block`` is used any other way."""
    divisors: set[int] = set()
    wrapped = [0]
    uses = [0]

    def visit(node: Any) -> None:
        if node.a.same_as(block):
            value = const_int(node.b)
            divisors.add(value if value is not None and value > 0 else -1)
            wrapped[0] += 1

    def count(node: Any) -> None:
        if node.same_as(block):
            uses[0] += 1

    tvm_ffi.structural_walk(body, [(tirx.FloorMod, visit), (tirx.FloorDiv, visit)], order="post")
    tvm_ffi.structural_walk(body, (tvm.ir.Var, count), order="post")
    if -1 in divisors or uses[0] != wrapped[0]:
        return None
    return divisors


def _accesses(stores: list[Any]) -> list[list[Any]]:
    """The index lists of every store and every load in ``stores``."""
    found = [list(s.indices) for s in stores]
    loads: list[Any] = []
    for store in stores:
        tvm_ffi.structural_walk(store.value, (tvm.ir.TensorLoad, loads.append), order="post")
    found += [list(load.indices) for load in loads]
    return found


def _mentions(expr: Any, var: Any) -> bool:
    found = [False]

    def visit(node: Any) -> None:
        if node.same_as(var):
            found[0] = True

    tvm_ffi.structural_walk(expr, (tvm.ir.Var, visit), order="post")
    return found[0]


def _contiguous_across(indices: list[Any], bx: Any, inner: Any, inner_extent: int) -> bool:
    """Whether the last index is ``inner_extent * bx + inner + (free of both)`` and the
    others mention neither."""
    if not indices or any(_mentions(i, bx) or _mentions(i, inner) for i in indices[:-1]):
        return False
    coefficients = sym.detect_linear_equation(indices[-1], [bx, inner])
    if len(coefficients) != 3:
        return False
    return const_int(coefficients[0]) == inner_extent and const_int(coefficients[1]) == 1


def _row_major_grid(loop: tirx.For) -> tirx.Stmt | None:
    """The grid loop ``loop`` reordered to walk rows (module doc), or None."""
    grid = const_int(loop.extent)
    if loop.kind != tirx.ForKind.PARALLEL or const_int(loop.min) != 0 or grid is None:
        return None
    block = loop.loop_var
    analyzer = sym.Analyzer()
    analyzer.bind(block, tvm.ir.Range.from_min_extent(0, grid))
    body: Any = loop.body
    if isinstance(body, tirx.IfThenElse) and analyzer.can_prove(body.condition):
        body = body.then_case
    nest: list[tirx.For] = []
    node: Any = body
    while _parallel_nest_loop(node):
        nest.append(node)
        node = node.body
    stores = _stores(node)
    if not nest or stores is None or not _pure(stores):
        return None
    divisors = _block_divisors(body, block)
    if divisors is None or len(divisors) != 1:
        return None
    (width,) = divisors
    if width < 2 or grid % width or grid == width:
        return None
    by = tirx.Var("by", "int32")
    bx = tirx.Var("bx", "int32")
    analyzer.bind(by, tvm.ir.Range.from_min_extent(0, grid // width))
    analyzer.bind(bx, tvm.ir.Range.from_min_extent(0, width))
    for inner_loop in nest:
        analyzer.bind(
            inner_loop.loop_var,
            tvm.ir.Range.from_min_extent(0, int(const_int(inner_loop.extent) or 0)),
        )
    new_stores = []
    for store in stores:
        moved = substitute_vars(store, {block: by * width + bx})
        new_stores.append(
            tirx.BufferStore(
                moved.buffer,
                analyzer.simplify(moved.value),
                [analyzer.simplify(i) for i in moved.indices],
            )
        )
    if any(_mentions(s, block) for s in new_stores):
        return None
    split: tirx.Stmt = new_stores[0] if len(new_stores) == 1 else tirx.SeqStmt(new_stores)
    innermost = nest[-1]
    inner_extent = int(const_int(innermost.extent) or 0)
    if not all(
        _contiguous_across(indices, bx, innermost.loop_var, inner_extent)
        for indices in _accesses(new_stores)
    ):
        return None
    # for (by, outer) in parallel: for middle...: for bx: for innermost: stores
    rebuilt: tirx.Stmt = rebuild_loop(innermost, body=split)
    rebuilt = tirx.For(bx, 0, width, tirx.ForKind.SERIAL, rebuilt)
    for middle in reversed(nest[1:-1]):
        rebuilt = rebuild_loop(middle, body=rebuilt)
    if len(nest) == 1:
        return tirx.For(by, 0, grid // width, tirx.ForKind.PARALLEL, rebuilt)
    # One parallel task per row: (by, outer) fused, so a grid one block high still
    # spreads over the cores.
    outer = nest[0]
    outer_extent = int(const_int(outer.extent) or 0)
    rows = tirx.Var("row", "int32")
    analyzer.bind(rows, tvm.ir.Range.from_min_extent(0, grid // width * outer_extent))
    mapping = {
        by: tirx.floordiv(rows, outer_extent),
        outer.loop_var: tirx.floormod(rows, outer_extent),
    }

    def simplified(store: tirx.BufferStore) -> tirx.BufferStore:
        return tirx.BufferStore(
            store.buffer,
            analyzer.simplify(store.value),
            [analyzer.simplify(i) for i in store.indices],
        )

    rebuilt = tvm_ffi.structural_map(
        substitute_vars(rebuilt, mapping), (tirx.BufferStore, simplified), order="post"
    )
    return tirx.For(rows, 0, grid // width * outer_extent, tirx.ForKind.PARALLEL, rebuilt)


def interchange_grid_rows(stmt: tirx.Stmt) -> tirx.Stmt:
    """Return ``stmt`` with every qualifying grid loop walking rows (module doc)."""

    def rewrite(loop: tirx.For) -> tirx.Stmt:
        result = _row_major_grid(loop)
        return loop if result is None else result

    return tvm_ffi.structural_map(stmt, (tirx.For, rewrite), order="post")


@dataclass(frozen=True)
class CpuInterchangeGridRowsPass(PrimFuncPass):
    """Move an elementwise grid's ``x`` axis inside its tile rows (module doc)."""

    name: ClassVar[str] = "cpu-interchange-grid-rows"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its elementwise grids walking rows."""
        return interchange_grid_rows(body)
