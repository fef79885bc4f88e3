"""Grid ownership of atomic addresses: atomics that no two CPU threads can race on.

On a GPU every block may run at the same time as every other, so
``T.atomic_add(C[...], v)`` must be a hardware atomic. On the CPU the grid is
run by a few threads, and an atomic is needed only where two of them can touch
the same address. This module proves, for one ``T.Kernel`` launch, which grid
axes can run in parallel without that ever happening; `cpu-lower-launch` then
runs the other grid axes serially inside each thread and turns the atomics into
plain read-modify-writes, which vectorize (the add of a whole accumulator tile
into ``C`` becomes one vector loop instead of one compare-and-swap per element).

The proof (`plan_atomic_ownership`), for the one global buffer ``X`` the
launch updates atomically:

* every access of ``X`` in the launch (the atomics, plain loads and stores,
  tile-op regions) is collected with its index per dimension and its extent,
  lets and single-value locals inlined (`index_values`);
  a pointer to ``X`` escaping into a call (``address_of``, ``access_ptr``, an
  extern call) or a tile op naming all of ``X`` defeats the proof;
* grid axis ``a`` is **owned** when some dimension ``d`` of ``X`` separates
  its blocks: in every access, index ``d`` is ``c * a + rest`` with the same
  constant ``c`` (TVM's ``detect_linear_equation``), and over all accesses the
  union of the ranges of ``rest`` (plus the access's extent) spans fewer than
  ``|c|`` values (TVM's integer bounds, with every grid axis, thread index and
  enclosing loop variable bound to its range; branch conditions are ignored,
  which only widens the ranges). Two blocks with different ``a`` then touch
  disjoint index ranges in dimension ``d``, hence disjoint addresses whatever
  their other coordinates are;
* the launch is privatized when at least one axis is owned: the owned axes
  form the parallel loop (the one separating ``X``'s innermost dimension
  fastest, so a thread's consecutive blocks walk memory in address order),
  the others (the **colliding** axes, e.g. split-k's ``bz``, which every
  block of one output tile shares) run serially inside each parallel
  iteration, so all blocks that can meet on an address run on one thread,
  one after the other. Any schedule of a grid's blocks is a legal
  GPU schedule, so results are those of some GPU run (floating-point sums in
  one fixed order of the blocks).
* **band order**: when the outermost owned axis alone gives enough parallel
  blocks and the part of ``X`` one of its values covers (the band) fits in
  `BAND_BYTES`, only that axis is parallel and, inside it, the colliding
  axes run outside the other owned axes: each colliding step then streams
  through the band's memory (``atomic_add_program``: one contiguous slab of
  ``A[bz]`` per step instead of 32-element rows of every slab per block),
  and the band stays cached between steps.

When any step fails (an index read from memory, a symbolic coefficient, two
atomically updated buffers, which might alias), the launch keeps its atomics.
A launch that would keep fewer than ``min_owned_blocks`` parallel blocks
keeps them too (the atomics cost less than idle cores; a symbolic grid extent
counts as enough), unless no axis collides (then nothing is serialized).

Memory orders: ``T.atomic_*(memory_order=...)`` is relaxed on the CPU (a
hint; the kernel's barriers order its effects). An acquire/release order is
only observable by a thread that reads the location the atomic writes; the
proof covers every access of the buffer in the launch, so no other thread
reads or writes an owned address until the grid loop's closing barrier, and
within its owner thread program order already holds. A plain access is
therefore indistinguishable from the atomic one, whatever order was asked.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import tvm
import tvm_ffi
from tvm import sym, tirx

from tl_codegen_cpu.lowering.atomics import emit_tile_atomic
from tl_codegen_cpu.lowering.index_values import (
    binding_ranges,
    forwarded_scalars,
    inline_index_values,
)
from tl_codegen_cpu.lowering.thread_ir import op_name, scope_of, uses_any
from tl_codegen_cpu.lowering.tile_emitters import TileRegion
from tl_ir import scopes
from tl_ir.builtin_ops import builtin_op_names
from tl_ir.ops import AtomicOp, Region, const_int, describe, is_tile_op

#: Calls through which a pointer to a buffer may escape the analysis.
_ESCAPING_CALLS = builtin_op_names(
    "address_of",
    "tvm_access_ptr",
    "call_extern",
    "call_pure_extern",
    "tvm_call_packed",
    "tvm_call_cpacked",
    "call_llvm_intrin",
    "call_llvm_pure_intrin",
)


#: The most bytes of the updated buffer one parallel iteration may cover for the
#: band order (module docstring): half of a common L2 cache, so that the band
#: stays cached while each step of the colliding axes revisits it.
BAND_BYTES = 256 * 1024


@dataclass(frozen=True)
class _Access:
    mins: tuple[Any, ...]
    extents: tuple[Any, ...]


@dataclass(frozen=True)
class AtomicOwnership:
    """The plan for one launch whose atomics no two threads can race on.

    Attributes:
        buffer: the global buffer the launch updates atomically.
        parallel_blocks: the grid axes ``(var, extent)`` of the parallel loop, all
            owned, fastest first (the one separating the buffer's innermost dimension
            leads, so that a thread's consecutive blocks walk memory in order).
        serial_blocks: the grid axes ``(var, extent)`` run as serial loops inside
            each parallel iteration, innermost first: every colliding axis, and in
            band order the owned axes but the outermost before them.
        ranges: the ranges the proof bound (grid axes, threads, loops, lets), reused
            to drop the bounds guards it can prove when the atomics become plain.
        forwarded: ``(buffer, value)`` of the one-element locals the indices read
            (`index_values.forwarded_scalars`).
    """

    buffer: Any
    parallel_blocks: tuple[tuple[Any, Any], ...]
    serial_blocks: tuple[tuple[Any, Any], ...]
    ranges: tuple[tuple[Any, Any], ...]
    forwarded: tuple[tuple[Any, Any], ...] = ()

    def analyzer(self) -> Any:
        """A fresh TVM analyzer with `ranges` bound."""
        analyzer = sym.Analyzer()
        for var, bound in self.ranges:
            analyzer.bind(var, bound)
        return analyzer


def _atomic_ops(body: tirx.Stmt) -> list[AtomicOp]:
    found: list[AtomicOp] = []

    def visit(evaluate: Any) -> None:
        if is_tile_op(evaluate.value):
            op = describe(evaluate.value)
            if isinstance(op, AtomicOp):
                found.append(op)

    tvm_ffi.structural_walk(body, (tirx.Evaluate, visit), order="pre")
    return found


def _accesses(body: tirx.Stmt, buffer: Any) -> list[_Access] | None:
    """Every access of ``buffer`` in ``body``; None when a pointer to it escapes or a
    tile op names the whole buffer."""
    accesses: list[_Access] = []
    escapes = False

    def visit_load(load: Any) -> None:
        if load.source.same_as(buffer):
            accesses.append(_Access(tuple(load.indices), (1,) * len(load.indices)))

    def visit_store(store: Any) -> None:
        if store.buffer.same_as(buffer):
            accesses.append(_Access(tuple(store.indices), (1,) * len(store.indices)))

    def visit_call(call: Any) -> None:
        nonlocal escapes
        name = op_name(call)
        if name == "tl.region":
            # A tile operand: its first element (also seen as a load) and its extents.
            load = call.args[0]
            if isinstance(load, tvm.ir.TensorLoad) and load.source.same_as(buffer):
                accesses.append(_Access(tuple(load.indices), tuple(call.args[2:])))
        elif name in _ESCAPING_CALLS or is_tile_op(call):
            # A pointer handed to a call, or a whole-buffer tile operand: unbounded.
            direct = any(isinstance(arg, tvm.ir.Var) and arg.same_as(buffer) for arg in call.args)
            if direct or (name in _ESCAPING_CALLS and uses_any(call, {buffer})):
                escapes = True

    tvm_ffi.structural_walk(
        body,
        [
            (tvm.ir.TensorLoad, visit_load),
            (tirx.BufferStore, visit_store),
            (tvm.ir.Call, visit_call),
        ],
        order="pre",
    )
    return None if escapes else accesses


def _separates(analyzer: Any, axis: Any, accesses: list[_Access], dim: int) -> bool:
    """Whether index ``dim`` of every access is ``c * axis + rest`` with one constant
    ``c`` and all the ``rest`` ranges (plus extents) spanning fewer than ``|c|`` values."""
    coefficient: int | None = None
    low, high = math.inf, -math.inf
    for access in accesses:
        parts = sym.detect_linear_equation(access.mins[dim], [axis])
        if len(parts) != 2:
            return False
        c = const_int(parts[0])
        if c is None or c == 0 or (coefficient is not None and c != coefficient):
            return False
        coefficient = c
        rest = analyzer.const_int_bound(analyzer.simplify(parts[1]))
        extent = analyzer.const_int_bound(access.extents[dim])
        low = min(low, int(rest.min_value))
        high = max(high, int(rest.max_value) + int(extent.max_value) - 1)
    return coefficient is not None and high - low < abs(coefficient)


def _innermost_separating_dim(
    analyzer: Any, axis: Any, accesses: list[_Access], rank: int
) -> int | None:
    for dim in reversed(range(rank)):
        if _separates(analyzer, axis, accesses, dim):
            return dim
    return None


def _band_bytes(
    ranges: Sequence[tuple[Any, Any]], outer: Any, accesses: list[_Access], buffer: Any
) -> float:
    """Bytes of the box of ``buffer`` that one value of grid axis ``outer`` accesses
    (every other Var over its range); infinite when an index is unbounded."""
    analyzer = sym.Analyzer()
    for var, bound in ranges:
        analyzer.bind(var, tvm.ir.Range.from_min_extent(0, 1) if var.same_as(outer) else bound)
    total = float(tvm.DataType(str(buffer.dtype)).bits // 8 or 1)
    for dim in range(len(buffer.shape)):
        low, high = math.inf, -math.inf
        for access in accesses:
            index = analyzer.const_int_bound(analyzer.simplify(access.mins[dim]))
            extent = analyzer.const_int_bound(access.extents[dim])
            low = min(low, int(index.min_value))
            high = max(high, int(index.max_value) + int(extent.max_value) - 1)
        total *= high - low + 1
    return total


def _block_count(blocks: Sequence[tuple[Any, Any]]) -> float:
    count = 1.0
    for _, extent in blocks:
        value = const_int(extent)
        count *= math.inf if value is None else value
    return count


def plan_atomic_ownership(
    body: tirx.Stmt,
    blocks: Sequence[tuple[Any, Any]],
    threads: Sequence[tuple[Any, Any]],
    min_owned_blocks: int,
) -> AtomicOwnership | None:
    """The ownership plan of one launch's global atomics (module docstring), or None.

    Args:
        body: the launch's body (inside its ``thread_extent`` attributes, thread
            binding loops already bound to the thread Vars).
        blocks: the grid axes ``(var, extent)``, ``blockIdx.x`` first.
        threads: the thread axes ``(var, extent)``.
        min_owned_blocks: the fewest parallel blocks worth serializing colliding axes for.

    Returns:
        None when the launch has no global atomics, or when the proof fails, or when
        serializing would leave fewer than ``min_owned_blocks`` parallel blocks.
    """
    ops = _atomic_ops(body)
    targets: list[Any] = []
    for op in ops:
        if scope_of(op.dst.buffer) != scopes.GLOBAL:
            continue  # block-local: one core touches it (see emit_tile_atomic)
        if any(const_int(e) is None for e in op.dst.extents):
            return None  # the tile lowering reports the symbolic extent
        if isinstance(op.value, Region) and any(const_int(e) is None for e in op.value.extents):
            return None
        if not any(t.same_as(op.dst.buffer) for t in targets):
            targets.append(op.dst.buffer)
    if len(targets) != 1 or not blocks:
        return None
    buffer = targets[0]
    if len(buffer.strides) != 0:
        return None  # explicit strides may overlap: indices would not name one address each
    ranges = binding_ranges(body, [*blocks, *threads])
    found = _accesses(body, buffer)
    if ranges is None or not found:
        return None
    scalars = forwarded_scalars(body)
    accesses = [
        _Access(
            tuple(inline_index_values(m, ranges, scalars) for m in access.mins),
            tuple(inline_index_values(e, ranges, scalars) for e in access.extents),
        )
        for access in found
    ]
    forwarded = tuple(scalars.items())
    analyzer = AtomicOwnership(buffer, (), (), tuple(ranges), forwarded).analyzer()
    rank = len(buffer.shape)
    owned: list[tuple[int, tuple[Any, Any]]] = []
    colliding: list[tuple[Any, Any]] = []
    for axis in blocks:
        dim = _innermost_separating_dim(analyzer, axis[0], accesses, rank)
        if dim is None:
            colliding.append(axis)
        else:
            owned.append((dim, axis))
    if not owned:
        return None
    fastest_first = tuple(axis for _, axis in sorted(owned, key=lambda item: -item[0]))
    if colliding and _block_count(fastest_first) < min_owned_blocks:
        return None
    outer = fastest_first[-1]
    if (
        colliding
        and len(fastest_first) > 1
        and _block_count([outer]) >= min_owned_blocks
        and _band_bytes(ranges, outer[0], accesses, buffer) <= BAND_BYTES
    ):
        # Band order: the colliding axes between the outermost owned axis and the rest.
        serial = (*fastest_first[:-1], *colliding)
        return AtomicOwnership(buffer, (outer,), serial, tuple(ranges), forwarded)
    return AtomicOwnership(buffer, fastest_first, tuple(colliding), tuple(ranges), forwarded)


def _drop_proven_guards(stmt: tirx.Stmt, analyzer: Any) -> tirx.Stmt:
    # The emitter's loops are new Vars: bind them, then keep only the guards not proven.
    def bind(loop: Any) -> None:
        analyzer.bind(loop.loop_var, tvm.ir.Range.from_min_extent(loop.min, loop.extent))

    tvm_ffi.structural_walk(stmt, (tirx.For, bind), order="pre")

    def simplify(branch: Any) -> Any:
        if branch.else_case is None and analyzer.can_prove(branch.condition):
            return branch.then_case
        return branch

    return tvm_ffi.structural_map(stmt, (tirx.IfThenElse, simplify), order="post")


def _tile(region: Region, plan: AtomicOwnership) -> TileRegion:
    # The indices as the proof read them (lets and forwarded locals inlined), so the
    # bounds guards it implies can be dropped.
    scalars = dict(plan.forwarded)
    mins = tuple(inline_index_values(m, plan.ranges, scalars) for m in region.mins)
    extents = tuple(int(const_int(e) or 0) for e in region.extents)
    return TileRegion(region.buffer, mins, extents)


def privatize_atomics(body: tirx.Stmt, plan: AtomicOwnership) -> tirx.Stmt:
    """Return ``body`` with every atomic on ``plan.buffer`` lowered to a plain
    read-modify-write (`emit_tile_atomic` with ``owned=True``), its bounds guards
    dropped where the plan's ranges prove them."""
    analyzer = plan.analyzer()

    def rewrite(evaluate: Any) -> Any:
        if not is_tile_op(evaluate.value):
            return evaluate
        op = describe(evaluate.value)
        if not isinstance(op, AtomicOp) or not op.dst.buffer.same_as(plan.buffer):
            return evaluate
        value = _tile(op.value, plan) if isinstance(op.value, Region) else op.value
        prev = None if op.prev is None else _tile(op.prev, plan)
        plain = emit_tile_atomic(_tile(op.dst, plan), value, op.kind, owned=True, prev=prev)
        return _drop_proven_guards(plain, analyzer)

    result: tirx.Stmt = tvm_ffi.structural_map(body, (tirx.Evaluate, rewrite), order="post")
    return result
