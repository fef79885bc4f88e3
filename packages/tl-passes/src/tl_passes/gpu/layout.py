"""`gpu-infer-layouts`: how each fragment tile is spread over the threads of a block.

A fragment (``T.alloc_fragment``, scope ``local.fragment``) is one tile of
the block whose elements live in the registers of its threads. A
`FragmentLayout` says which thread holds which element and at which local
index. Three kinds exist:

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
``annotated``
    ``T.annotate_layout({frag: fn})`` where ``fn(*indices)`` returns
    ``(thread, local_index)``: the map is evaluated at compile time for
    every element; each thread scans the tile for its own elements
    (correct, not fast).

Inference runs to a fixed point: a ``T.Parallel`` nest that writes a
replicated fragment runs on every thread, so the partitioned fragments it
touches become replicated too.

A view of a fragment (``T.reshape``/``T.view``: a ``DeclBuffer`` over the
fragment's memory, same dtype) shares its fragment's registers: it gets the
fragment's kind and slot width with its own shape. The flat (row-major)
element order of a view is the fragment's, so a partitioned view puts every
element on the same thread at the same local index; when either needs to be
replicated, both are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_passes.pass_base import PassContext, PrimFuncPass

FRAGMENT_SCOPE = "local.fragment"
LOOP_KIND_KEY = "tl.loop_kind"
#: Function attribute (name -> description) written by `GpuInferLayoutsPass`.
LAYOUTS_ATTR = "tl.gpu_fragment_layouts"
LAYOUT_MAP_ATTR = "tl.layout_map"

PARTITIONED = "partitioned"
REPLICATED = "replicated"
ANNOTATED = "annotated"


class LayoutError(ValueError):
    """A fragment cannot be given a layout the lowering supports."""


@dataclass(frozen=True)
class FragmentLayout:
    """Where the elements of one fragment live (see the module docstring).

    Attributes:
        name: the fragment's buffer name.
        shape: its static shape.
        num_threads: threads per block.
        kind: `PARTITIONED`, `REPLICATED` or `ANNOTATED`.
        vector: consecutive elements per slot (partitioned).
        owners: per element (row-major), ``(thread, local)`` (annotated).
    """

    name: str
    shape: tuple[int, ...]
    num_threads: int
    kind: str
    vector: int = 1
    owners: tuple[tuple[int, int], ...] = field(default=(), repr=False)
    index_map: Any = field(default=None, repr=False, compare=False)
    view_of: str | None = None

    @property
    def numel(self) -> int:
        """Elements of the tile."""
        return math.prod(self.shape)

    @property
    def local_size(self) -> int:
        """Elements each thread holds (padded: some threads may hold fewer)."""
        if self.kind == REPLICATED:
            return self.numel
        if self.kind == ANNOTATED:
            return max(local for _, local in self.owners) + 1
        slots = self.numel // self.vector
        return -(-slots // self.num_threads) * self.vector

    @property
    def exact(self) -> bool:
        """Partitioned with every thread holding exactly `local_size` elements."""
        return self.numel % (self.num_threads * self.vector) == 0

    def element_of(self, thread: Any, local: Any) -> tuple[Any, Any | None]:
        """Partitioned only: the flat element a thread holds at ``local``, and the
        condition that it exists (None when it always does)."""
        v, t = self.vector, self.num_threads
        slot = (local // v) * t + thread if v > 1 else local * t + thread
        flat = slot * v + local % v if v > 1 else slot
        valid = None if self.exact else slot < self.numel // v
        return flat, valid

    def describe(self) -> str:
        """One line for IR dumps and tests: ``kind vector=v local=n`` (plus ``view of
        NAME`` for a view)."""
        line = f"{self.kind} vector={self.vector} local={self.local_size}"
        return line if self.view_of is None else f"{line} view of {self.view_of}"


def default_vector(shape: tuple[int, ...], num_threads: int) -> int:
    """The slot width of the default layout (see the module docstring)."""
    numel = math.prod(shape)
    inner = shape[-1] if shape else 1
    for width in (4, 2, 1):
        if inner % width == 0 and numel % (num_threads * width) == 0:
            return width
    for width in (4, 2, 1):
        if inner % width == 0:
            return width
    return 1


def static_shape(buffer: Any) -> tuple[int, ...]:
    """The buffer's shape as ints.

    Raises:
        LayoutError: a dim is symbolic.
    """
    dims = []
    for extent in buffer.shape:
        if not isinstance(extent, tirx.IntImm):
            raise LayoutError(
                f"fragment {buffer.name}: expected a static shape on GPU targets, "
                f"got {list(buffer.shape)}"
            )
        dims.append(int(extent))
    return tuple(dims)


def loop_kind_of(loop: Any) -> str:
    """The ``tl.loop_kind`` annotation of a For ('' when absent)."""
    annotations = loop.annotations
    if annotations is not None and LOOP_KIND_KEY in annotations:
        return str(annotations[LOOP_KIND_KEY])
    return ""


def parallel_nest(loop: Any) -> tuple[list[Any], list[int], Any]:
    """The perfect nest of ``T.Parallel`` loops starting at ``loop``.

    Returns:
        (loop vars, static extents, innermost body).

    Raises:
        LayoutError: an extent of the nest is not a constant.
    """
    loop_vars: list[Any] = []
    extents: list[int] = []
    current = loop
    while isinstance(current, tirx.For) and loop_kind_of(current) == "parallel":
        if not isinstance(current.extent, tirx.IntImm):
            raise LayoutError(
                f"T.Parallel over {current.loop_var}: expected a constant extent on GPU "
                f"targets, got {current.extent}"
            )
        loop_vars.append(current.loop_var)
        extents.append(int(current.extent))
        current = current.body
    return loop_vars, extents, current


def is_buffer_load(value: Any) -> bool:
    """Whether ``value`` is a buffer load expression."""
    return type(value).__name__ == "TensorLoad"


@dataclass
class _NestAccess:
    aligned: set[str]
    misaligned: set[str]
    written: set[str]


def _fragment_accesses(
    body: Any, loop_vars: list[Any], extents: list[int], fragments: dict[str, Any]
) -> _NestAccess:
    result = _NestAccess(set(), set(), set())

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

    def visit_store(store: Any) -> None:
        classify(store.buffer, list(store.indices), True)

    def visit_any(node: Any) -> None:
        if is_buffer_load(node):
            classify(node.source, list(node.indices), False)

    tvm_ffi.structural_walk(body, (tirx.BufferStore, visit_store), order="pre")
    tvm_ffi.structural_walk(body, visit_any, order="pre")
    return result


def _annotated_owners(buffer: Any, index_map: Any, num_threads: int) -> tuple[tuple[int, int], ...]:
    shape = static_shape(buffer)
    analyzer = tvm.sym.Analyzer() if hasattr(tvm, "sym") else None
    owners: list[tuple[int, int]] = []
    for flat in range(math.prod(shape)):
        index = []
        rest = flat
        for extent in reversed(shape):
            index.append(rest % extent)
            rest //= extent
        index.reverse()
        mapped = index_map.map_indices([tirx.IntImm("int32", i) for i in index])
        if len(mapped) != 2:
            raise LayoutError(
                f"T.annotate_layout for fragment {buffer.name}: expected a function returning "
                f"(thread, local_index), got {len(mapped)} outputs"
            )
        values = []
        for value in mapped:
            if analyzer is not None:
                value = analyzer.simplify(value)
            if not isinstance(value, tirx.IntImm):
                raise LayoutError(
                    f"T.annotate_layout for fragment {buffer.name}: the layout must give "
                    f"constants for constant indices, got {value}"
                )
            values.append(int(value))
        thread, local = values
        if not 0 <= thread < num_threads or local < 0:
            raise LayoutError(
                f"T.annotate_layout for fragment {buffer.name}: element {tuple(index)} maps to "
                f"thread {thread}, local {local}; expected 0 <= thread < {num_threads} and "
                "local >= 0"
            )
        owners.append((thread, local))
    if len(set(owners)) != len(owners):
        raise LayoutError(
            f"T.annotate_layout for fragment {buffer.name}: two elements map to the same "
            "(thread, local) slot"
        )
    return tuple(owners)


def infer_fragment_layouts(func: Any, num_threads: int) -> dict[str, FragmentLayout]:
    """The layout of every fragment of ``func`` (keyed by buffer name).

    Args:
        func: a PrimFunc as ``tl_ir.language`` produces it (tile ops, ``T.Kernel``).
        num_threads: threads per block.

    Raises:
        LayoutError: a fragment has a symbolic shape, two fragments share a
            name, or an annotated layout is malformed.
    """
    from tl_ir import ops as tile

    fragments: dict[str, Any] = {}

    def visit_alloc(alloc: Any) -> None:
        buffer = alloc.buffer
        if str(buffer.ty.storage_scope) != FRAGMENT_SCOPE:
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

    replicated: set[str] = set()

    def frag_name(region: Any) -> str | None:
        name = str(region.buffer.name)
        return name if name in fragments and region.buffer.same_as(fragments[name]) else None

    for op in tile.tile_ops(func):
        regions: list[tuple[Any, bool]] = []
        if isinstance(op, tile.CopyOp):
            regions = [(op.src, False), (op.dst, False)]
        elif isinstance(op, tile.FillOp):
            regions = [(op.dst, False)]
        elif isinstance(op, tile.GemmOp):
            regions = [(op.a, True), (op.b, True), (op.c, False)]
        elif isinstance(op, tile.ReduceOp):
            regions = [(op.src, False), (op.dst, True)]
        elif isinstance(op, tile.CumsumOp):
            regions = [(op.src, True), (op.dst, True)]
        elif isinstance(op, tile.AtomicOp):
            regions = [(op.dst, False)]
            if isinstance(op.value, tile.Region):
                regions.append((op.value, False))
        elif isinstance(op, tile.PrintOp) and isinstance(op.value, tile.Region):
            regions = [(op.value, True)]
        for region, needs_replica in regions:
            name = frag_name(region)
            if name is None:
                continue
            if needs_replica or not region.is_full:
                replicated.add(name)

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
                    replicated.add(name)

        if isinstance(node, tirx.BufferStore):
            name = str(node.buffer.name)
            if name in fragments:
                replicated.add(name)
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
                    replicated.add(name)

        tvm_ffi.structural_walk(expr, visit, order="pre")

    collect(func.body, False)

    accesses = [_fragment_accesses(body, lv, ext, fragments) for lv, ext, body in nests]
    changed = True
    while changed:
        changed = False
        for access in accesses:
            new = set(access.misaligned)
            if access.written & (replicated | access.misaligned):
                new |= access.aligned
            if not new <= replicated:
                replicated |= new
                changed = True
        # A fragment and its views share registers: one replicated makes all replicated.
        for view_name, (_, root) in views.items():
            if (view_name in replicated) != (root in replicated):
                replicated |= {view_name, root}
                changed = True

    annotations = func.attrs.get(LAYOUT_MAP_ATTR) if func.attrs is not None else None
    layouts: dict[str, FragmentLayout] = {}
    viewed = {root for _, root in views.values()}
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
            owners = _annotated_owners(buffer, annotations[name], num_threads)
            layouts[name] = FragmentLayout(
                name, shape, num_threads, ANNOTATED, 1, owners, annotations[name]
            )
        elif name in replicated:
            layouts[name] = FragmentLayout(name, shape, num_threads, REPLICATED)
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


def fragment_views(body: Any, fragments: dict[str, Any]) -> dict[str, tuple[Any, str]]:
    """The views of fragments in ``body``: view name -> (view buffer, the fragment whose
    registers it shares), following views of views.

    Raises:
        LayoutError: a view changes the dtype, or has a symbolic shape.
    """
    views: dict[str, tuple[Any, str]] = {}

    def visit(decl: Any) -> None:
        source = viewed_buffer(decl)
        if source is None:
            return
        source_name = str(source.name)
        if source_name in views and source.same_as(views[source_name][0]):
            root = views[source_name][1]
        elif source_name in fragments and source.same_as(fragments[source_name]):
            root = source_name
        else:
            return
        buffer = decl.buffer
        name = str(buffer.name)
        if str(buffer.ty.dtype) != str(source.ty.dtype):
            raise LayoutError(
                f"fragment view {name}: expected the dtype of fragment {source_name} "
                f"({source.ty.dtype}) on GPU targets, got {buffer.ty.dtype}"
            )
        if name in fragments or name in views:
            raise LayoutError(f"two fragments are named {name!r}; expected unique names")
        static_shape(buffer)
        views[name] = (buffer, root)

    tvm_ffi.structural_walk(body, (tirx.DeclBuffer, visit), order="pre")
    return views


def viewed_buffer(decl: Any) -> Any | None:
    """The buffer whose memory the ``DeclBuffer`` ``decl`` views (``tirx.buffer_data``),
    or None when it declares other memory."""
    data = decl.data
    if isinstance(data, tvm.ir.Call) and str(data.op.name) == "tirx.buffer_data" and data.args:
        return data.args[0]
    return None


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
    recomputes the same layouts (the inference is deterministic)."""

    name: ClassVar[str] = "gpu-infer-layouts"

    def transform_function(
        self, func: tirx.PrimFunc, function_name: str, ctx: PassContext
    ) -> tirx.PrimFunc:
        """``func`` with its fragments' layouts recorded (as is when it has none)."""
        from tl_passes.gpu.launches import kernel_functions

        described: dict[str, str] = {}
        for _, kernel in kernel_functions(func):
            layouts = infer_fragment_layouts(kernel, block_threads(kernel))
            described.update((name, layout.describe()) for name, layout in layouts.items())
        if not described:
            return func
        return func.with_attr(LAYOUTS_ATTR, described)


def same_placement(a: FragmentLayout, b: FragmentLayout) -> bool:
    """Whether two layouts put every element on the same thread at the same local index."""
    return (a.kind, a.shape, a.num_threads, a.vector, a.owners) == (
        b.kind,
        b.shape,
        b.num_threads,
        b.vector,
        b.owners,
    )
