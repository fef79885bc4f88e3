"""`KernelLowering`: one kernel's lowering state, iteration drivers and statement walk.

The thread's linear index ``tid`` is ``threadIdx.x + threadIdx.y * X +
threadIdx.z * X * Y``; ``T`` is the block size. Fragments get the layouts of
`layout.infer_fragment_layouts` and become thread-local arrays (``local``
scope): ``local_size`` elements for a partitioned or annotated fragment, the
whole tile for a replicated one.

Who does what, per operand kind (`KernelLowering.drive`):

* a partitioned fragment drives the iteration: each thread walks its own
  local indices (unrolled when there are at most `UNROLL_LIMIT`);
* shared or global tiles with no partitioned operand are split
  cooperatively: flat element ``it * T + tid`` for ``it`` in
  ``ceildiv(numel, T)``; under a thread-dependent branch, over the threads
  the branch selects (`branch_threads`: ``if tx < 128`` deals the elements to
  threads 0-127 with ``T = 128``), as TileLang partitions the nest over the
  thread range its condition bounds;
* replicated fragments and ``local`` arrays: every thread does every element.

Work spread over partitioned fragments' threads (their own elements, warp
shuffles, tensor-core tiles) cannot be redealt to part of the block: under a
thread-dependent branch that excludes some threads it is a `GpuLoweringError`.

``T.Pipelined`` loops arrive as rings or in order (`pipelined_ring`); the ring's
async copies are lowered by `async_copy`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import tvm_ffi
from tvm import tirx

from tl_ir import scopes
from tl_ir.launch import LOOP_KIND_KEY, NUM_STAGES_KEY, annotations_without, rebuild_loop
from tl_passes.gpu.async_copy import lower_async_copy
from tl_passes.gpu.atomics import lower_atomic
from tl_passes.gpu.branch_threads import BranchThreads
from tl_passes.gpu.copy import lower_copy
from tl_passes.gpu.cumsum import lower_cumsum
from tl_passes.gpu.errors import GpuLoweringError
from tl_passes.gpu.fill import lower_fill
from tl_passes.gpu.gemm import lower_gemm
from tl_passes.gpu.layout import (
    ANNOTATED,
    REPLICATED,
    FragmentLayout,
    block_threads,
    infer_fragment_layouts,
    loop_kind_of,
    same_placement,
)
from tl_passes.gpu.operand import Operand
from tl_passes.gpu.parallel import Nest, lower_parallel, rewrite_expr
from tl_passes.gpu.pipelined_ring import is_async_copy
from tl_passes.gpu.reduce import lower_reduce
from tl_passes.gpu.shared_memory import rescope
from tl_passes.gpu.tir_build import UNROLL_LIMIT, for_loop, guard, int_imm, seq, unflatten
from tl_passes.gpu.traits import GpuTraits


class KernelLowering:
    """The lowering of one kernel: its threads, fragment layouts and iteration drivers.

    The tile-op modules (`copy`, `fill`, `gemm`, `reduce`, `cumsum`, `atomics`,
    `parallel`) build per-thread code through it; `lower` walks the kernel body
    and hands each tile op to its module.

    Args:
        func: the PrimFunc (tile ops, one ``T.Kernel``).
        traits: what the target's codegen offers.
        target: the TVM target (read only for ``traits.warp_size_for``).

    Raises:
        GpuLoweringError: ``func`` has no ``T.Kernel`` launch.
        LayoutError: a fragment cannot be laid out.
    """

    def __init__(self, func: Any, traits: GpuTraits, target: Any | None = None) -> None:
        from tl_ir.launch import kernel_launch

        self.func = func
        self.traits = traits
        self.target = target
        self.warp_size = traits.warp_size_for(target)
        launch = kernel_launch(func)
        if launch is None:
            raise GpuLoweringError("a GPU kernel needs a T.Kernel launch")
        self.num_threads = block_threads(func)
        tid: Any = None
        stride = 1
        for var, extent in zip(launch.thread_vars, launch.threads, strict=True):
            term = var if stride == 1 else var * stride
            tid = term if tid is None else tid + term
            stride *= int(extent)
        self.tid = tid if tid is not None else int_imm(0)
        self.branches = BranchThreads(
            func.body, launch.thread_vars, [int(e) for e in launch.threads]
        )
        self.target = target
        self.layouts: dict[str, FragmentLayout] = infer_fragment_layouts(
            func, self.num_threads, traits, target, self.warp_size
        )
        self.local_buffers: dict[str, Any] = {}
        self.fragment_vars: dict[str, Any] = {}
        self.counter = 0

    # ---- names and buffers -------------------------------------------------
    def fresh(self, stem: str) -> Any:
        """A new int32 variable named ``stem<n>``."""
        self.counter += 1
        return tirx.Var(f"{stem}{self.counter}", "int32")

    def local_array(self, stem: str, shape: Sequence[int], dtype: str) -> Any:
        """A new thread-local array (declare it with ``AllocBuffer``)."""
        self.counter += 1
        return tirx.decl_buffer(tuple(shape), dtype, f"{stem}{self.counter}", scope=scopes.LOCAL)

    def shared_array(self, stem: str, shape: Sequence[int], dtype: str) -> Any:
        """A new static shared array (declare it with ``AllocBuffer``)."""
        self.counter += 1
        return tirx.decl_buffer(tuple(shape), dtype, f"{stem}{self.counter}", scope=scopes.SHARED)

    # ---- iteration drivers -------------------------------------------------
    def owned(self, layout: FragmentLayout, body: Callable[[list[Any], Any], Any]) -> Any:
        """Each thread visits the elements of ``layout`` it holds: body(flat-unflattened index
        over the fragment's dims, local index).

        Raises:
            GpuLoweringError: a thread-dependent branch excludes some of the threads
                holding the elements.
        """
        self.require_whole_block(f"work over the partitioned fragment {layout.name}")
        shape = list(layout.shape)
        if layout.kind == ANNOTATED:
            # The annotated map gives (thread, local) for an index: each thread scans the
            # tile for its own elements.
            flat = self.fresh("e")
            index = unflatten(flat, shape)
            thread, local = layout.index_map.map_indices(index)
            return for_loop(flat, layout.numel, guard(body(index, local), thread == self.tid))
        if layout.unrolled:
            # Constant local indices: the thread's registers stay registers. A body that
            # defines variables or buffers cannot be repeated; it becomes a loop that
            # the device compiler unrolls (``#pragma unroll``), folding the same indices.
            first_index, _ = layout.index_of(self.tid, 0)
            first = body(first_index, int_imm(0))
            if not _defines_anything(first):
                bodies = [first]
                for local in range(1, layout.local_size):
                    index, _ = layout.index_of(self.tid, local)
                    bodies.append(body(index, int_imm(local)))
                return seq(bodies)
            local_var = self.fresh("l")
            index, _ = layout.index_of(self.tid, local_var)
            return for_loop(local_var, layout.local_size, body(index, local_var), True)
        local_var = self.fresh("l")
        flat, valid = layout.element_of(self.tid, local_var)
        index = unflatten(flat, shape)
        unroll = layout.local_size <= UNROLL_LIMIT
        return for_loop(local_var, layout.local_size, guard(body(index, local_var), valid), unroll)

    def cooperative(
        self,
        extents: Sequence[int],
        body: Callable[[list[Any]], Any],
        what: str = "a tile op over shared or global tiles",
    ) -> Any:
        """The threads running this code split the elements of an ``extents`` tile:
        the whole block, or the run of threads the enclosing thread-dependent
        branches select (`branch_threads`; ``what`` names the work in its errors).

        Raises:
            GpuLoweringError: as `BranchThreads.selected`.
        """
        numel = math.prod(extents)
        active = self.branches.selected(what)
        t = self.num_threads if active is None else len(active)
        if t == 0:
            return seq([])
        tid = self.tid if active is None or active.start == 0 else self.tid - active.start
        if numel <= t:
            index = unflatten(tid, extents)
            return guard(body(index), None if numel == t else tid < numel)
        it = self.fresh("it")
        flat = it * t + tid
        index = unflatten(flat, extents)
        valid = None if numel % t == 0 else flat < numel
        steps = -(-numel // t)
        return for_loop(it, steps, guard(body(index), valid), steps <= 8)

    def require_whole_block(self, what: str) -> None:
        """Check that every thread of the block runs the current code (``what``:
        work dealt over all of the block's threads by a fixed plan).

        Raises:
            GpuLoweringError: a thread-dependent branch around it excludes threads
                (or which threads take it is not known at compile time).
        """
        if not self.branches.restricted():
            return
        active = self.branches.selected(what)
        if active is not None and len(active) > 0:
            raise GpuLoweringError(
                f"{what} under a thread-dependent branch that only threads "
                f"{active.start}-{active.stop - 1} of {self.num_threads} take: its work is "
                "laid out over every thread of the block, and re-laying it out over part "
                "of the block is not implemented (move it out of the branch)"
            )

    def every(self, extents: Sequence[int], body: Callable[[list[Any]], Any]) -> Any:
        """Every thread visits every element."""
        loop_vars = [self.fresh("i") for _ in extents]
        stmt = body(list(loop_vars))
        for var, extent in zip(reversed(loop_vars), reversed(list(extents)), strict=True):
            stmt = for_loop(var, extent, stmt)
        return stmt

    def drive(
        self,
        operands: Sequence[Operand],
        extents: Sequence[int],
        body: Callable[[list[Any], Any], Any],
        writer: Operand | None,
    ) -> Any:
        """Pick the iteration for a tile op over ``extents`` (squeezed) with ``operands``."""
        for operand in operands:
            if operand.partitioned:
                assert operand.layout is not None
                if [e for e in operand.layout.shape if e != 1] != list(extents):
                    raise GpuLoweringError(
                        f"fragment {operand.name}: tile extents {list(extents)} differ from "
                        f"its shape {list(operand.layout.shape)}"
                    )
                layout = operand.layout

                def squeeze_body(
                    index: list[Any], local: Any, shape: tuple[int, ...] = layout.shape
                ) -> Any:
                    squeezed = [i for i, e in zip(index, shape, strict=True) if e != 1]
                    return body(squeezed, local)

                for other in operands:
                    if other.partitioned and other is not operand:
                        assert other.layout is not None
                        if not same_placement(other.layout, layout):
                            raise GpuLoweringError(
                                f"fragments {operand.name} and {other.name} have different "
                                "layouts; a layout conversion is not implemented"
                            )
                return self.owned(layout, squeeze_body)
        if writer is not None and writer.per_thread:
            return self.every(extents, lambda index: body(index, None))
        return self.cooperative(extents, lambda index: body(index, None))

    def lower_stmt(self, stmt: Any, per_element: bool, nest: Nest | None) -> Any:
        """``stmt`` with its tile ops and ``T.Parallel`` nests lowered; ``per_element``:
        inside code each thread runs for its own elements; ``nest``: the enclosing nest."""
        from tl_ir import ops as tile

        if isinstance(stmt, tirx.SeqStmt):
            return seq([self.lower_stmt(s, per_element, nest) for s in stmt.seq])
        if is_async_copy(stmt):
            op = tile.describe(stmt.body.value)
            assert isinstance(op, tile.CopyOp)
            return lower_async_copy(self, op)
        if isinstance(stmt, tirx.AttrStmt):
            return tirx.AttrStmt(
                stmt.node, stmt.attr_key, stmt.value, self.lower_stmt(stmt.body, per_element, nest)
            )
        if isinstance(stmt, tirx.For):
            if loop_kind_of(stmt) == "parallel" and nest is None:
                return lower_parallel(self, stmt, per_element)
            annotations = annotations_without(stmt, (LOOP_KIND_KEY, NUM_STAGES_KEY))
            kind = stmt.kind
            if loop_kind_of(stmt) == "parallel":
                kind = tirx.ForKind.SERIAL
            varying = nest is None and self.branches.depends(tirx.Add(stmt.min, stmt.extent))
            if varying:
                self.branches.enter_loop(f"for {stmt.loop_var} in [{stmt.min}, +{stmt.extent})")
            try:
                loop_body = self.lower_stmt(stmt.body, per_element, nest)
            finally:
                if varying:
                    self.branches.leave()
            return rebuild_loop(stmt, body=loop_body, kind=kind, annotations=annotations)
        if isinstance(stmt, tirx.IfThenElse):
            then_case = self._lower_branch(stmt.then_case, stmt.condition, True, per_element, nest)
            else_case = (
                self._lower_branch(stmt.else_case, stmt.condition, False, per_element, nest)
                if stmt.else_case is not None
                else None
            )
            return tirx.IfThenElse(stmt.condition, then_case, else_case)
        if isinstance(stmt, tirx.While):
            varying = nest is None and self.branches.depends(stmt.condition)
            if varying:
                self.branches.enter_loop(f"while {stmt.condition}")
            try:
                return tirx.While(stmt.condition, self.lower_stmt(stmt.body, per_element, nest))
            finally:
                if varying:
                    self.branches.leave()
        if isinstance(stmt, tirx.AllocBuffer):
            name = str(stmt.buffer.name)
            if name in self.local_buffers and stmt.buffer.same_as(self.fragment_vars[name]):
                return tirx.AllocBuffer(self.local_buffers[name])
            return stmt
        if isinstance(stmt, tirx.DeclBuffer):
            name = str(stmt.buffer.name)
            if name in self.local_buffers and stmt.buffer.same_as(self.fragment_vars[name]):
                return self._declare_view(self.layouts[name])
            return stmt
        if isinstance(stmt, tirx.Evaluate) and tile.is_tile_op(stmt.value):
            op = tile.describe(stmt.value)
            if isinstance(op, tile.CopyOp):
                if self.branches.restricted():
                    for region in (op.src, op.dst):
                        if Operand(region, self).partitioned:
                            self.require_whole_block(f"T.copy of the fragment {region.buffer.name}")
                return lower_copy(self, op)
            if isinstance(op, tile.FillOp):
                return lower_fill(self, op)
            if isinstance(op, (tile.GemmOp, tile.ReduceOp, tile.CumsumOp)):
                self._check_block_work(op)
            if isinstance(op, tile.GemmOp):
                return lower_gemm(self, op)
            if isinstance(op, tile.ReduceOp):
                return lower_reduce(self, op)
            if isinstance(op, tile.CumsumOp):
                return lower_cumsum(self, op)
            if isinstance(op, tile.AtomicOp):
                return lower_atomic(self, op, per_element)
            raise GpuLoweringError(f"T.print is not implemented on GPU target {self.traits.name!r}")
        return stmt

    def _check_block_work(self, op: Any) -> None:
        """A GEMM, reduction or scan over block-shared data is dealt over the whole
        block by a fixed plan: refuse it under a branch that excludes threads."""
        if not self.branches.restricted():
            return
        from tl_ir import ops as tile

        regions = [op.a, op.b, op.c] if isinstance(op, tile.GemmOp) else [op.src, op.dst]
        if all(Operand(region, self).per_thread for region in regions):
            return
        self.require_whole_block(f"T.{op.name}")

    def _lower_branch(
        self, stmt: Any, condition: Any, taken: bool, per_element: bool, nest: Nest | None
    ) -> Any:
        """One branch of ``if condition`` (``taken``: the then branch), lowered with
        the threads it selects known to the drivers when it is thread-dependent."""
        pushed = nest is None and self.branches.enter_if(condition, taken)
        try:
            return self.lower_stmt(stmt, per_element, nest)
        finally:
            if pushed:
                self.branches.leave()

    def _declare_view(self, layout: FragmentLayout) -> Any:
        """The statement standing for the declaration of a fragment view: a partitioned
        view uses its fragment's registers as they are (nothing to declare); a replicated
        one declares them under the view's shape."""
        if layout.kind != REPLICATED:
            return seq([])
        assert layout.view_of is not None
        base = self.local_buffers[layout.view_of]
        return tirx.DeclBuffer(self.local_buffers[layout.name], data=tirx.buffer_data(base))

    def lower(self) -> Any:
        """The kernel body as per-thread code (fragments become thread-local arrays)."""
        buffers = _fragment_buffers(self.func.body)
        for name, layout in self.layouts.items():
            buffer = buffers[name]
            self.fragment_vars[name] = buffer
            if layout.view_of is None:
                shape = layout.shape if layout.kind == REPLICATED else (layout.local_size,)
                self.local_buffers[name] = tirx.decl_buffer(
                    shape, str(buffer.ty.dtype), name=f"{name}_regs", scope=scopes.LOCAL
                )
        for name, layout in self.layouts.items():
            if layout.view_of is None:
                continue
            base = self.local_buffers[layout.view_of]
            if layout.kind != REPLICATED:
                # Same flat order and slot width: the fragment's registers as they are.
                self.local_buffers[name] = base
            else:
                self.local_buffers[name] = tirx.decl_buffer(
                    layout.shape,
                    str(buffers[name].ty.dtype),
                    name=f"{name}_regs",
                    scope=scopes.LOCAL,
                )
        body = self.lower_stmt(self.func.body, False, None)
        body = rescope(body, scopes.LOCAL_VAR, scopes.LOCAL)
        # Element accesses of replicated fragments outside T.Parallel nests.
        return rewrite_expr(self, body, None)


def _defines_anything(stmt: Any) -> bool:
    """Whether ``stmt`` defines a variable or a buffer (so it cannot appear twice)."""
    found = [False]

    def visit(node: Any) -> None:
        found[0] = True

    kinds = (tirx.Bind, tirx.AllocBuffer, tirx.DeclBuffer, tirx.For)
    for kind in kinds:
        tvm_ffi.structural_walk(stmt, (kind, visit), order="pre")
    return found[0]


def _fragment_buffers(body: Any) -> dict[str, Any]:
    """The fragments and fragment views declared in ``body``, by name (first wins)."""
    found: dict[str, Any] = {}

    def visit(decl: Any) -> None:
        buffer = decl.buffer
        if str(buffer.ty.storage_scope) == scopes.FRAGMENT:
            found.setdefault(str(buffer.name), buffer)

    tvm_ffi.structural_walk(body, (tirx.AllocBuffer, visit), order="pre")
    tvm_ffi.structural_walk(body, (tirx.DeclBuffer, visit), order="pre")
    return found
