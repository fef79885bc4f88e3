"""`gpu-infer-layouts`: how each fragment tile is spread over the threads of a block.

A fragment (``T.alloc_fragment``, scope ``local.fragment``) is one tile of
the block whose elements live in the registers of its threads. A
`FragmentLayout` says which thread holds which element and at which local
index. Five kinds exist:

``partitioned`` (the default)
    Flatten the tile row-major and cut it into slots of ``vector``
    consecutive elements (``vector`` the widest of 4, 2, 1 that divides the
    innermost dim and makes ``numel / (threads * vector)`` integral, else
    the widest that divides the innermost dim). Slot ``s`` goes to thread
    ``s % threads``, round-robin; thread ``t`` holds its slots in order, so
    its local index ``l`` is element
    ``((l // vector) * threads + t) * vector + l % vector``.
``replicated``
    Every thread holds the whole tile (same shape). Used where threads need
    elements other threads compute: reduce outputs, cumsum operands, gemm
    A/B fragments, fragments indexed with anything but the loop variables
    of a ``T.Parallel`` nest, and fragments a replicated loop writes.
``mma``
    The accumulator placement of a target matrix instruction (`WarpTiles`):
    the C fragment of a ``T.gemm`` the target can run on one, fragments joined
    to it by full copies and aligned nests, and an A fragment that feeds such
    a gemm from registers (`tensor_core_plan`).
``rows``
    The rows of an ``mma`` placement: a row reduction's destination and the
    1-D fragments joined to it; read at the row index in nests an ``mma``
    fragment drives.
``annotated``
    ``T.annotate_layout({frag: fn})`` where ``fn(*indices)`` returns
    ``(thread, local_index)``: the map is evaluated at compile time for
    every element; each thread scans the tile for its own elements
    (correct, not fast).

Inference runs to a fixed point: a ``T.Parallel`` nest that writes a
replicated fragment runs on every thread, so the partitioned fragments it
touches become replicated too. The ``mma``/``rows`` plan comes first; a planned
fragment whose uses do not fit (see `_unfit`) leaves the plan, which is made
again without it.

A view of a fragment (``T.reshape``/``T.view``: a ``DeclBuffer`` over the
fragment's memory, same dtype) shares its fragment's registers: it gets the
fragment's kind and slot width with its own shape. The flat (row-major)
element order of a view is the fragment's, so a partitioned view puts every
element on the same thread at the same local index; when either needs to be
replicated, both are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir import scopes
from tl_ir.ops import viewed_buffer
from tl_passes.gpu.layout_base import (
    ANNOTATED,
    LAYOUT_MAP_ATTR,
    LAYOUTS_ATTR,
    MMA,
    PARTITIONED,
    REPLICATED,
    ROWS,
    FragmentLayout,
    LayoutError,
    default_vector,
    is_buffer_load,
    loop_kind_of,
    parallel_nest,
    same_placement,
    static_shape,
)
from tl_passes.gpu.layout_views import annotated_owners, fragment_views
from tl_passes.gpu.tensor_core_plan import NestInfo, TensorCorePlan, plan_tensor_cores
from tl_passes.gpu.traits import PORTABLE_TRAITS, GpuTraits
from tl_passes.pass_base import PassContext, PrimFuncPass

__all__ = [
    "ANNOTATED",
    "LAYOUTS_ATTR",
    "LAYOUT_MAP_ATTR",
    "MMA",
    "PARTITIONED",
    "REPLICATED",
    "ROWS",
    "FragmentLayout",
    "GpuInferLayoutsPass",
    "LayoutError",
    "block_threads",
    "default_vector",
    "fragment_views",
    "infer_fragment_layouts",
    "is_buffer_load",
    "loop_kind_of",
    "parallel_nest",
    "same_placement",
    "static_shape",
    "viewed_buffer",
]


def _fragment_accesses(
    body: Any, loop_vars: list[Any], extents: list[int], fragments: dict[str, Any]
) -> NestInfo:
    from tl_ir import ops as tile

    result = NestInfo(list(extents))
    other_uses: set[str] = set()

    def classify(buffer: Any, indices: Any, store: bool) -> None:
        name = str(buffer.name)
        if name not in fragments or not buffer.same_as(fragments[name]):
            return
        if store:
            result.written.add(name)
        shape = static_shape(buffer)
        same = (
            len(indices) == len(loop_vars)
            and all(idx.same_as(var) for idx, var in zip(indices, loop_vars, strict=True))
            and list(shape) == extents
        )
        (result.aligned if same else result.misaligned).add(name)
        row_read = (
            not store
            and len(loop_vars) > 1
            and len(indices) == 1
            and indices[0].same_as(loop_vars[0])
        )
        (result.row_reads if row_read else other_uses).add(name)

    def visit_store(store: Any) -> None:
        classify(store.buffer, list(store.indices), True)

    def visit_any(node: Any) -> None:
        if is_buffer_load(node):
            classify(node.source, list(node.indices), False)
        elif isinstance(node, tvm.ir.Call) and tile.is_tile_op(node):
            result.has_tile_op = True

    tvm_ffi.structural_walk(body, (tirx.BufferStore, visit_store), order="pre")
    tvm_ffi.structural_walk(body, visit_any, order="pre")
    result.row_reads -= other_uses
    return result


def infer_fragment_layouts(
    func: Any,
    num_threads: int,
    traits: GpuTraits = PORTABLE_TRAITS,
    target: Any | None = None,
    warp_size: int | None = None,
) -> dict[str, FragmentLayout]:
    """The layout of every fragment of ``func`` (keyed by buffer name).

    Args:
        func: a PrimFunc as ``tl_ir.language`` produces it (tile ops, ``T.Kernel``).
        num_threads: threads per block.
        traits: the target's `GpuTraits` (its matrix instructions decide the `MMA`
            and `ROWS` layouts).
        target: the TVM target (which matrix instructions exist).
        warp_size: lanes per warp (default: ``traits.warp_size_for(target)``).

    Raises:
        LayoutError: a fragment has a symbolic shape, two fragments share a
            name, or an annotated layout is malformed.
    """
    from tl_ir import ops as tile

    if warp_size is None:
        warp_size = traits.warp_size_for(target)
    fragments: dict[str, Any] = {}

    def visit_alloc(alloc: Any) -> None:
        buffer = alloc.buffer
        if str(buffer.ty.storage_scope) != scopes.FRAGMENT:
            return
        name = str(buffer.name)
        if name in fragments:
            raise LayoutError(f"two fragments are named {name!r}; expected unique names")
        static_shape(buffer)
        fragments[name] = buffer

    tvm_ffi.structural_walk(func.body, (tirx.AllocBuffer, visit_alloc), order="pre")
    if not fragments:
        return {}
    views = fragment_views(func.body, fragments)
    for view_name, (view_buffer, _) in views.items():
        fragments[view_name] = view_buffer

    # Fragments a use outside tile ops and T.Parallel nests needs on every thread.
    outside: set[str] = set()
    # (fragment, why it needs every element on every thread: "op" unless a tensor-core
    # layout exempts it, "gemm-a" for a gemm A, "reduce-dst" for a reduce destination).
    op_needs: list[tuple[str, str]] = []
    # Fragments whose elements a tile op would count once per holder (ROWS unfit).
    counted_once: set[str] = set()

    def frag_name(region: Any) -> str | None:
        name = str(region.buffer.name)
        return name if name in fragments and region.buffer.same_as(fragments[name]) else None

    ops = list(tile.tile_ops(func))
    for op in ops:
        regions: list[tuple[Any, str | None]] = []
        if isinstance(op, tile.CopyOp):
            regions = [(op.src, None), (op.dst, None)]
        elif isinstance(op, tile.FillOp):
            regions = [(op.dst, None)]
        elif isinstance(op, tile.GemmOp):
            regions = [(op.a, "gemm-a"), (op.b, "op"), (op.c, None)]
        elif isinstance(op, tile.ReduceOp):
            regions = [(op.src, None), (op.dst, "reduce-dst")]
            counted_once.add(str(op.src.buffer.name))
        elif isinstance(op, tile.CumsumOp):
            regions = [(op.src, "op"), (op.dst, "op")]
        elif isinstance(op, tile.AtomicOp):
            regions = [(op.dst, None)]
            if isinstance(op.value, tile.Region):
                regions.append((op.value, None))
                counted_once.add(str(op.value.buffer.name))
        elif isinstance(op, tile.PrintOp) and isinstance(op.value, tile.Region):
            regions = [(op.value, "op")]
        for region, need in regions:
            name = frag_name(region)
            if name is None:
                continue
            if not region.is_full:
                op_needs.append((name, "op"))
            elif need is not None:
                op_needs.append((name, need))

    # Element accesses outside T.Parallel nests (and outside tile ops, whose
    # operands are tl.region calls) need every element on every thread.
    nests: list[tuple[list[Any], list[int], Any]] = []

    def collect(stmt: Any, inside_parallel: bool) -> None:
        if isinstance(stmt, tirx.For) and loop_kind_of(stmt) == "parallel" and not inside_parallel:
            nest = parallel_nest(stmt)
            nests.append(nest)
            return
        if isinstance(stmt, tirx.BufferStore):
            _outside(stmt)
            return
        for child in _children(stmt):
            collect(child, inside_parallel)

    def _outside(node: Any) -> None:
        def visit(value: Any) -> None:
            if is_buffer_load(value):
                name = str(value.source.name)
                if name in fragments:
                    outside.add(name)

        if isinstance(node, tirx.BufferStore):
            name = str(node.buffer.name)
            if name in fragments:
                outside.add(name)
        tvm_ffi.structural_walk(node, visit, order="pre")

    def _children(stmt: Any) -> list[Any]:
        if isinstance(stmt, tirx.SeqStmt):
            return list(stmt.seq)
        if isinstance(stmt, (tirx.AttrStmt, tirx.For, tirx.While)):
            if isinstance(stmt, tirx.While):
                _outside_expr(stmt.condition)
            return [stmt.body]
        if isinstance(stmt, tirx.IfThenElse):
            _outside_expr(stmt.condition)
            return [s for s in (stmt.then_case, stmt.else_case) if s is not None]
        if isinstance(stmt, tirx.Bind):
            _outside_expr(stmt.value)
            return []
        if isinstance(stmt, tirx.Evaluate):
            call = stmt.value
            if not tile.is_tile_op(call):
                _outside_expr(call)
            else:
                # Scalar operands of tile ops (atomic values) are element reads.
                for arg in call.args:
                    if is_buffer_load(arg):
                        _outside_expr(arg)
            return []
        return []

    def _outside_expr(expr: Any) -> None:
        def visit(value: Any) -> None:
            if is_buffer_load(value):
                name = str(value.source.name)
                if name in fragments:
                    outside.add(name)

        tvm_ffi.structural_walk(expr, visit, order="pre")

    collect(func.body, False)

    accesses = [_fragment_accesses(body, lv, ext, fragments) for lv, ext, body in nests]
    annotations = func.attrs.get(LAYOUT_MAP_ATTR) if func.attrs is not None else None
    viewed = {root for _, root in views.values()}
    plannable = {
        name: buffer
        for name, buffer in fragments.items()
        if name not in views
        and name not in viewed
        and not (annotations is not None and name in annotations)
    }
    banned: set[str] = set()
    while True:
        plan = plan_tensor_cores(
            ops,
            accesses,
            {n: b for n, b in plannable.items() if n not in banned},
            num_threads,
            warp_size,
            traits,
            target,
        )
        replicated = _replicated(outside, op_needs, accesses, views, plan)
        unfit = _unfit(plan, replicated, accesses, counted_once)
        if not unfit:
            break
        # Only the unfit fragments leave the plan: the rest of their group keeps it
        # (copies and nests between differently placed fragments convert or refit on
        # the next round).
        banned |= unfit

    layouts: dict[str, FragmentLayout] = {}
    for name, buffer in fragments.items():
        if name in views:
            continue
        shape = static_shape(buffer)
        if annotations is not None and name in annotations and name in viewed:
            raise LayoutError(
                f"fragment {name}: T.annotate_layout on a fragment that is also used "
                "through a view (T.reshape/T.view) is not supported on GPU targets"
            )
        if annotations is not None and name in annotations and name not in replicated:
            owners = annotated_owners(buffer, annotations[name], num_threads)
            layouts[name] = FragmentLayout(
                name, shape, num_threads, ANNOTATED, 1, owners, annotations[name]
            )
        elif name in replicated:
            layouts[name] = FragmentLayout(name, shape, num_threads, REPLICATED)
        elif name in plan.layouts:
            layouts[name] = plan.layouts[name]
        else:
            vector = default_vector(shape, num_threads)
            layouts[name] = FragmentLayout(name, shape, num_threads, PARTITIONED, vector)
    for view_name, (view_buffer, root) in views.items():
        base = layouts[root]
        layouts[view_name] = FragmentLayout(
            view_name,
            static_shape(view_buffer),
            num_threads,
            base.kind,
            base.vector,
            view_of=root,
        )
    return layouts


def _replicated(
    outside: set[str],
    op_needs: list[tuple[str, str]],
    accesses: list[NestInfo],
    views: dict[str, tuple[Any, str]],
    plan: TensorCorePlan,
) -> set[str]:
    """The fragments every thread must hold whole, given the tensor-core ``plan``: the
    tile-op operands that need it (a gemm A and a reduce destination unless planned),
    the accesses outside nests, and to a fixed point the misaligned accesses in nests
    (row reads the plan allows excepted) and every fragment a nest that writes a
    replicated one touches; a fragment and its views together."""
    replicated = set(outside)
    for name, need in op_needs:
        planned = plan.layouts.get(name)
        if need == "gemm-a" and name in plan.register_a:
            continue
        if need == "reduce-dst" and planned is not None and planned.kind == ROWS:
            continue
        replicated.add(name)
    exempt = [plan.exempt_row_reads(access) for access in accesses]
    changed = True
    while changed:
        changed = False
        for access, allowed in zip(accesses, exempt, strict=True):
            misaligned = access.misaligned - allowed
            new = set(misaligned)
            if access.written & (replicated | misaligned):
                new |= access.aligned
            if not new <= replicated:
                replicated |= new
                changed = True
        # A fragment and its views share registers: one replicated makes all replicated.
        for view_name, (_, root) in views.items():
            if (view_name in replicated) != (root in replicated):
                replicated |= {view_name, root}
                changed = True
    return replicated


def _unfit(
    plan: TensorCorePlan,
    replicated: set[str],
    accesses: list[NestInfo],
    counted_once: set[str],
) -> set[str]:
    """Planned fragments whose uses the tensor-core layouts do not fit: replicated
    after all, in a nest beside a distributed fragment with another placement, `ROWS`
    fragments a tile op would count once per holder (a reduce source, an atomic
    value) or that drive a nest holding a tile op."""
    unfit = {name for name in plan.layouts if name in replicated}
    for name, layout in plan.layouts.items():
        if layout.kind == ROWS and name in counted_once:
            unfit.add(name)
    for access in accesses:
        distributed = {n for n in access.aligned if n not in replicated}
        planned = {n for n in distributed if n in plan.layouts}
        if planned and (planned != distributed):
            unfit |= planned
        if access.has_tile_op and any(plan.layouts[n].kind == ROWS for n in planned):
            unfit |= planned
    return unfit


def block_threads(func: Any) -> int:
    """Threads per block of ``func``'s ``T.Kernel`` (1 when it has none).

    Raises:
        LayoutError: a thread extent is symbolic.
    """
    from tl_ir.launch import kernel_launch

    launch = kernel_launch(func)
    if launch is None:
        return 1
    total = launch.num_threads
    if total is None:
        raise LayoutError(f"expected constant thread extents, got {list(launch.threads)}")
    return total


@dataclass(frozen=True)
class GpuInferLayoutsPass(PrimFuncPass):
    """Record each fragment's layout in the function attribute ``tl.gpu_fragment_layouts``
    (name -> `FragmentLayout.describe`), for dumps and tests. The lowering
    recomputes the same layouts (the inference is deterministic).

    Args:
        traits: the backend's `GpuTraits` (its matrix instructions; default
            `PORTABLE_TRAITS`, none).
    """

    name: ClassVar[str] = "gpu-infer-layouts"
    traits: GpuTraits = field(default=PORTABLE_TRAITS)

    def transform_function(
        self, func: tirx.PrimFunc, function_name: str, ctx: PassContext
    ) -> tirx.PrimFunc:
        """``func`` with its fragments' layouts recorded (as is when it has none)."""
        from tl_passes.gpu.launches import kernel_functions

        described: dict[str, str] = {}
        for _, kernel in kernel_functions(func):
            layouts = infer_fragment_layouts(kernel, block_threads(kernel), self.traits, ctx.target)
            described.update((name, layout.describe()) for name, layout in layouts.items())
        if not described:
            return func
        return func.with_attr(LAYOUTS_ATTR, described)
