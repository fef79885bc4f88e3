"""``T.Parallel`` nests on GPU targets, and fragment element accesses inside them.

A nest over a partitioned fragment (indexed by the loop variables) follows
that fragment's layout: each thread loops over its local indices. A nest
writing a replicated fragment or a thread-local array runs entirely on every
thread. A nest over shared/global tiles only is split across the threads that run
it: the whole block, or, under a thread-dependent ``if``, the run of threads
the condition selects (`branch_threads`), so every iteration runs once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir import scopes
from tl_passes.gpu.errors import GpuLoweringError
from tl_passes.gpu.layout import (
    MMA,
    ROWS,
    FragmentLayout,
    is_buffer_load,
    parallel_nest,
    same_placement,
)
from tl_passes.gpu.tir_build import const_int, int_imm

if TYPE_CHECKING:
    from tl_passes.gpu.kernel import KernelLowering


@dataclass
class Nest:
    """Where a statement sits inside a lowered ``T.Parallel`` nest.

    Attributes:
        substitution: (loop variable, its per-thread index expression) pairs.
        local: the local index of the element in the driving fragment (None
            when the nest is not driven by a partitioned fragment).
        row_local: in a nest an `MMA` fragment drives, the local index of the
            element's row in that placement's `ROWS` fragments.
    """

    substitution: list[tuple[Any, Any]]
    local: Any | None
    row_local: Any | None = None


def rewrite_expr(kernel: KernelLowering, expr: Any, nest: Nest | None) -> Any:
    """Rewrite element accesses of fragments in an expression or statement."""
    layouts = kernel.layouts
    local_buffers = kernel.local_buffers

    def on_load(node: Any) -> Any:
        if not is_buffer_load(node):
            return node
        name = str(node.source.name)
        target = local_buffers.get(name)
        if target is None or not node.source.same_as(kernel.fragment_vars[name]):
            return node
        layout = layouts[name]
        if layout.kind == ROWS and nest is not None and nest.row_local is not None:
            return tirx.BufferLoad(target, [nest.row_local])
        if layout.kind != "replicated":
            if nest is None or nest.local is None:
                raise GpuLoweringError(
                    f"fragment {name}: element read outside a T.Parallel nest over it"
                )
            return tirx.BufferLoad(target, [nest.local])
        return tirx.BufferLoad(target, list(node.indices))

    def on_store(node: Any) -> Any:
        name = str(node.buffer.name)
        target = local_buffers.get(name)
        if target is None or not node.buffer.same_as(kernel.fragment_vars[name]):
            return node
        layout = layouts[name]
        if layout.kind != "replicated":
            if nest is None or nest.local is None:
                raise GpuLoweringError(
                    f"fragment {name}: element written outside a T.Parallel nest over it"
                )
            return tirx.BufferStore(target, node.value, [nest.local])
        return tirx.BufferStore(target, node.value, list(node.indices))

    mapped = expr
    if nest is not None and nest.substitution:
        substitution = nest.substitution

        def on_var(var: Any) -> Any:
            for old, new in substitution:
                if var.same_as(old):
                    return new
            return var

        mapped = tvm_ffi.structural_map(mapped, (tvm.ir.Var, on_var), order="post")
    # Loads are rewritten on the catch-all (BufferLoad has no registered class).
    mapped = tvm_ffi.structural_map(mapped, (tirx.BufferStore, on_store), order="post")
    return tvm_ffi.structural_map(mapped, on_load, order="post")


def lower_parallel(kernel: KernelLowering, loop: Any, per_element: bool) -> Any:
    """The per-thread code of the ``T.Parallel`` nest ``loop`` (module docstring);
    ``per_element``: the nest sits where each thread runs its own element."""
    loop_vars, extents, body = parallel_nest(loop)
    driver: FragmentLayout | None = None
    rows_read: list[FragmentLayout] = []
    writes_replica = False
    touches_fragment = False
    for name, layout in kernel.layouts.items():
        accessed = _accesses(body, kernel.fragment_vars[name])
        if not accessed:
            continue
        touches_fragment = True
        reads_aligned, stores = accessed
        if layout.kind == ROWS and list(layout.shape) != extents:
            rows_read.append(layout)
            continue
        if layout.kind != "replicated" and reads_aligned:
            if driver is not None and not same_placement(driver, layout):
                raise GpuLoweringError(
                    f"T.Parallel{tuple(extents)}: fragments {driver.name} and {layout.name} "
                    "are laid out differently (an annotated layout?); converting between "
                    "layouts is not implemented"
                )
            driver = driver or layout
        if layout.kind == "replicated" and stores:
            writes_replica = True
    stores_private = _stores_private(body)
    for rows in rows_read:
        # Layout inference gives ROWS only to fragments read at the row index of a nest
        # an MMA fragment with the same rows drives.
        if driver is None or driver.kind != MMA or not _same_rows(driver, rows):
            raise GpuLoweringError(
                f"T.Parallel{tuple(extents)}: fragment {rows.name} holds accumulator rows "
                "but the nest is not driven by an accumulator with those rows"
            )

    def emit(index: list[Any], local: Any | None, element_context: bool) -> Any:
        row_local = None
        if driver is not None and driver.kind == MMA and local is not None:
            assert driver.tiles is not None
            value = const_int(local)
            row_local = driver.tiles.row_local(local if value is None else value)
            row_local = int_imm(row_local) if isinstance(row_local, int) else row_local
        nest = Nest(list(zip(loop_vars, index, strict=True)), local, row_local)
        inner = kernel.lower_stmt(body, element_context, nest)
        return rewrite_expr(kernel, inner, nest)

    if driver is not None:
        layout = driver
        if [e for e in layout.shape] != extents:
            raise GpuLoweringError(
                f"T.Parallel{tuple(extents)}: extents differ from fragment "
                f"{layout.name} {layout.shape}"
            )
        return kernel.owned(layout, lambda index, local: emit(index, local, True))
    if writes_replica or (touches_fragment and stores_private) or stores_private:
        return kernel.every(extents, lambda index: emit(index, None, per_element))
    return kernel.cooperative(
        extents,
        lambda index: emit(index, None, True),
        f"T.Parallel{tuple(extents)} over shared or global tiles",
    )


def _same_rows(driver: FragmentLayout, rows: FragmentLayout) -> bool:
    assert driver.tiles is not None and rows.tiles is not None
    return driver.tiles.same_rows(rows.tiles)


def _accesses(body: Any, buffer: Any) -> tuple[bool, bool] | None:
    reads = [False]
    stores = [False]

    def visit_store(store: Any) -> None:
        if store.buffer.same_as(buffer):
            stores[0] = True
            reads[0] = True

    def visit_any(node: Any) -> None:
        if is_buffer_load(node) and node.source.same_as(buffer):
            reads[0] = True

    tvm_ffi.structural_walk(body, (tirx.BufferStore, visit_store), order="pre")
    tvm_ffi.structural_walk(body, visit_any, order="pre")
    if not reads[0] and not stores[0]:
        return None
    return reads[0], stores[0]


def _stores_private(body: Any) -> bool:
    """Whether the nest ``body`` stores into a thread-local array declared outside it
    (a scalar the nest's own body declares, ``x = ...`` or the previous value of an
    atomic, is a temporary of one iteration and does not tie the nest to every thread)."""
    found = [False]
    declared: list[Any] = []

    def visit_alloc(alloc: Any) -> None:
        declared.append(alloc.buffer)

    def visit_store(store: Any) -> None:
        if scopes.is_local(store.buffer) and not any(store.buffer.same_as(b) for b in declared):
            found[0] = True

    tvm_ffi.structural_walk(body, (tirx.AllocBuffer, visit_alloc), order="pre")
    tvm_ffi.structural_walk(body, (tirx.BufferStore, visit_store), order="pre")
    return found[0]
