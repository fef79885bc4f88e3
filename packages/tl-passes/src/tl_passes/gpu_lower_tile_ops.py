"""`gpu-lower-tile-ops`: tile ops and ``T.Parallel`` nests become per-thread code.

Input: a kernel as ``tl_ir.language`` builds it, after `gpu-insert-barriers`.
Output: plain TIR over ``threadIdx``/``blockIdx`` that TVM's GPU codegens
accept. The thread's linear index ``tid`` is
``threadIdx.x + threadIdx.y * X + threadIdx.z * X * Y``; ``T`` is the block size.

Fragments get the layouts of `gpu_layout.infer_fragment_layouts` and become
thread-local arrays (``local`` scope): ``local_size`` elements for a
partitioned or annotated fragment, the whole tile for a replicated one.

Who does what, per operand kind:

* a partitioned fragment drives the iteration: each thread walks its own
  local indices (unrolled when there are at most 64);
* shared or global tiles with no partitioned operand are split
  cooperatively: flat element ``it * T + tid`` for ``it`` in
  ``ceildiv(numel, T)``;
* replicated fragments and ``local`` arrays: every thread does every element.

Ops:

* ``copy``: out-of-bounds source elements read as zero, out-of-bounds
  destination elements are not written (docs/language.md);
* ``fill``; ``gemm``: a per-thread FMA loop over K for the C elements the
  thread owns, accumulating in C's dtype (any dtype);
* ``reduce``: each thread folds its own elements into per-output
  partials, then threads combine them: warp shuffles (``shfl_xor``
  butterflies) and a shared array across warps where the target has
  shuffles (CUDA, ROCm), a shared-memory table otherwise; the result is on
  every thread;
* ``cumsum``: rows split over threads, each scanned sequentially;
* ``atomic_*``: hardware atomics (``atomicAdd``... on CUDA through
  `CUDA_ATOMICS_PRELUDE`, LLVM atomics on ROCm); a scalar atomic outside a
  ``T.Parallel`` nest runs once per block (thread 0);
* ``T.Parallel`` over fragments follows the partitioned fragment it
  indexes with its loop variables; over shared/global only, it is split
  cooperatively; a nest writing a replicated fragment runs on every thread.

``T.Pipelined`` loops run in order (their annotations are dropped).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_passes.gpu_insert_barriers import barrier
from tl_passes.gpu_layout import (
    ANNOTATED,
    FRAGMENT_SCOPE,
    PARTITIONED,
    FragmentLayout,
    LayoutError,
    block_threads,
    infer_fragment_layouts,
    is_buffer_load,
    loop_kind_of,
    parallel_nest,
)
from tl_passes.gpu_shared_memory import rescope
from tl_passes.pass_base import Pass, PassContext, replace_functions

#: Loops with at most this many iterations per thread are unrolled.
UNROLL_LIMIT = 64
#: Bytes of the shared table the shared-memory reduction uses per round.
REDUCE_TABLE_BYTES = 16384

#: Device helpers the CUDA lowering of ``atomic_max``/``atomic_min`` calls;
#: the CUDA codegen puts them before the kernels.
CUDA_ATOMICS_PRELUDE = r"""
__device__ __forceinline__ float tl_atomic_max(float* address, float value) {
  int* bits = (int*)address;
  int old = *bits, assumed;
  do {
    assumed = old;
    if (__int_as_float(assumed) >= value) break;
    old = atomicCAS(bits, assumed, __float_as_int(value));
  } while (assumed != old);
  return __int_as_float(old);
}
__device__ __forceinline__ float tl_atomic_min(float* address, float value) {
  int* bits = (int*)address;
  int old = *bits, assumed;
  do {
    assumed = old;
    if (__int_as_float(assumed) <= value) break;
    old = atomicCAS(bits, assumed, __float_as_int(value));
  } while (assumed != old);
  return __int_as_float(old);
}
__device__ __forceinline__ double tl_atomic_max(double* address, double value) {
  unsigned long long* bits = (unsigned long long*)address;
  unsigned long long old = *bits, assumed;
  do {
    assumed = old;
    if (__longlong_as_double(assumed) >= value) break;
    old = atomicCAS(bits, assumed, __double_as_longlong(value));
  } while (assumed != old);
  return __longlong_as_double(old);
}
__device__ __forceinline__ double tl_atomic_min(double* address, double value) {
  unsigned long long* bits = (unsigned long long*)address;
  unsigned long long old = *bits, assumed;
  do {
    assumed = old;
    if (__longlong_as_double(assumed) <= value) break;
    old = atomicCAS(bits, assumed, __double_as_longlong(value));
  } while (assumed != old);
  return __longlong_as_double(old);
}
__device__ __forceinline__ int tl_atomic_max(int* address, int value) {
  return atomicMax(address, value);
}
__device__ __forceinline__ int tl_atomic_min(int* address, int value) {
  return atomicMin(address, value);
}
"""


class GpuLoweringError(NotImplementedError):
    """A tile program uses something the GPU lowering does not support (yet)."""


@dataclass(frozen=True)
class TargetTraits:
    """What the lowering needs to know about a GPU target.

    Attributes:
        kind: the TVM target kind (``cuda``, ``rocm``, ``metal``, ``webgpu``...).
        warp_size: threads per warp/wavefront/simdgroup (1: no shuffles).
        warp_shuffles: whether reductions use warp shuffles.
        atomics: ``"cuda"``, ``"llvm"`` or ``""`` (none).
        max_vector_lanes: the most lanes a vector access may have (Metal and
            WebGPU codegens accept at most 4).
    """

    kind: str
    warp_size: int
    warp_shuffles: bool
    atomics: str
    max_vector_lanes: int = 16

    @classmethod
    def of(cls, target: Any | None) -> TargetTraits:
        """Traits of ``target`` (a TVM Target, or None for CUDA defaults)."""
        if target is None:
            return cls("cuda", 32, True, "cuda", 16)
        kind = str(target.kind.name)
        attrs = target.attrs
        warp = int(attrs["thread_warp_size"]) if "thread_warp_size" in attrs else 1
        if kind == "cuda":
            return cls(kind, warp, warp > 1, "cuda", 16)
        if kind == "rocm":
            return cls(kind, warp, warp > 1, "llvm", 16)
        return cls(kind, warp, False, "", 4)


def _int(value: int) -> Any:
    return tirx.IntImm("int32", value)


def _seq(stmts: Sequence[Any]) -> Any:
    flat: list[Any] = []
    for stmt in stmts:
        if isinstance(stmt, tirx.SeqStmt):
            flat.extend(stmt.seq)
        else:
            flat.append(stmt)
    if not flat:
        return tirx.Evaluate(_int(0))
    return flat[0] if len(flat) == 1 else tirx.SeqStmt(flat)


def _both(a: Any | None, b: Any | None) -> Any | None:
    if a is None:
        return b
    if b is None:
        return a
    return tirx.all(a, b)


def _guard(stmt: Any, condition: Any | None) -> Any:
    return stmt if condition is None else tirx.IfThenElse(condition, stmt, None)


def _loop(var: Any, extent: int, body: Any, unroll: bool = False) -> Any:
    kind = tirx.ForKind.UNROLLED if unroll else tirx.ForKind.SERIAL
    return tirx.For(var, _int(0), _int(extent), kind, body)


def _dtype(expr: Any) -> str:
    return str(expr.ty.dtype)


def _cast(value: Any, dtype: str) -> Any:
    if isinstance(value, (int, float)):
        return tirx.const(value, dtype)
    return value if _dtype(value) == dtype else tirx.Cast(dtype, value)


def _unflatten(flat: Any, extents: Sequence[int]) -> list[Any]:
    """Row-major index over ``extents`` of the flat position ``flat`` (< numel)."""
    index: list[Any] = []
    for d, extent in enumerate(extents):
        if extent == 1:
            index.append(_int(0))
            continue
        stride = math.prod(extents[d + 1 :])
        value = flat // stride if stride > 1 else flat
        index.append(value % extent if d > 0 else value)
    return index


def _const(value: Any) -> int | None:
    if isinstance(value, int):
        return value
    if isinstance(value, tirx.IntImm):
        return int(value.value)
    return None


class _Operand:
    """A tile operand (a `tl_ir.ops.Region`) with its place in the lowered kernel."""

    def __init__(self, region: Any, lowering: _KernelLowering) -> None:
        self.region = region
        self.buffer = region.buffer
        self.name = str(self.buffer.name)
        self.scope = str(self.buffer.ty.storage_scope) or "global"
        self.extents: list[int] = []
        for extent in region.extents:
            value = _const(extent)
            if value is None:
                raise GpuLoweringError(
                    f"tile operand {self.name}: expected static tile extents on GPU targets, "
                    f"got {list(region.extents)}"
                )
            self.extents.append(value)
        self.layout = lowering.layouts.get(self.name) if self.scope == FRAGMENT_SCOPE else None
        self.local_buffer = lowering.local_buffers.get(self.name)
        self.lowering = lowering

    @property
    def dtype(self) -> str:
        return str(self.buffer.ty.dtype)

    @property
    def partitioned(self) -> bool:
        return self.layout is not None and self.layout.kind in (PARTITIONED, ANNOTATED)

    @property
    def per_thread(self) -> bool:
        """Every thread holds all of it (replicated fragment or local array)."""
        if self.layout is not None:
            return not self.partitioned
        return self.scope in ("local", "local.var")

    @property
    def squeezed(self) -> list[int]:
        return [e for e in self.extents if e != 1]

    def full_index(self, tile_index: Sequence[Any]) -> list[Any]:
        """Buffer indices for a tile index over ALL dims of the region."""
        return [m + i for m, i in zip(self.region.mins, tile_index, strict=True)]

    def expand(self, squeezed_index: Sequence[Any]) -> list[Any]:
        """A per-dim tile index from an index over the non-unit dims."""
        out: list[Any] = []
        position = 0
        for extent in self.extents:
            if extent == 1:
                out.append(_int(0))
            else:
                out.append(squeezed_index[position])
                position += 1
        return out

    def inside(self, tile_index: Sequence[Any]) -> Any | None:
        """Condition that the element lies inside its buffer (None: always)."""
        if self.scope != "global" and self.scope not in ("shared", "shared.dyn"):
            return None
        condition = None
        for start, extent, size, i in zip(
            self.region.mins, self.extents, self.buffer.shape, tile_index, strict=True
        ):
            s, n = _const(start), _const(size)
            if s is not None and n is not None and s >= 0 and s + extent <= n:
                continue
            condition = _both(condition, start + i < size)
        return condition

    def load(self, tile_index: Sequence[Any], local: Any | None = None) -> Any:
        if self.partitioned:
            if local is None:
                raise GpuLoweringError(
                    f"fragment {self.name}: read by threads that do not hold it; a layout "
                    "conversion through shared memory is not implemented"
                )
            return tirx.BufferLoad(self.local_buffer, [local])
        buffer = self.local_buffer if self.local_buffer is not None else self.buffer
        return tirx.BufferLoad(buffer, self.full_index(tile_index))

    def store(self, tile_index: Sequence[Any], value: Any, local: Any | None = None) -> Any:
        value = _cast(value, self.dtype)
        if self.partitioned:
            if local is None:
                raise GpuLoweringError(
                    f"fragment {self.name}: written by threads that do not hold it; a layout "
                    "conversion through shared memory is not implemented"
                )
            return tirx.BufferStore(self.local_buffer, value, [local])
        buffer = self.local_buffer if self.local_buffer is not None else self.buffer
        return tirx.BufferStore(buffer, value, self.full_index(tile_index))


#: Bytes one vector access moves (128-bit loads and stores).
VECTOR_BYTES = 16


def _vector_width(src: _Operand, dst: _Operand, max_lanes: int) -> int | None:
    """Lanes of a 128-bit copy between ``src`` and ``dst``, or None when not allowed:
    both global/shared with the same dtype and extents, the innermost tile extent and
    both buffers' innermost dims multiples of the width, and both tiles starting at a
    multiple of it (so every vector is aligned and wholly in or out of bounds);
    at most ``max_lanes`` lanes."""
    vector_scopes = ("global", "shared", "shared.dyn")
    if src.scope not in vector_scopes or dst.scope not in vector_scopes:
        return None
    if src.dtype != dst.dtype or src.extents != dst.extents or not src.extents:
        return None
    bits = int(tvm.DataType(src.dtype).bits)
    if bits == 0 or (VECTOR_BYTES * 8) % bits:
        return None
    width = min(VECTOR_BYTES * 8 // bits, max_lanes)
    if width < 2 or src.extents[-1] % width:
        return None
    analyzer = tvm.sym.Analyzer()
    for operand in (src, dst):
        size = _const(operand.buffer.shape[-1])
        if size is None or size % width:
            return None
        start = analyzer.simplify(tirx.floormod(operand.region.mins[-1], width))
        if _const(start) != 0:
            return None
    return width


class _KernelLowering:
    def __init__(self, func: Any, traits: TargetTraits) -> None:
        from tl_ir.launch import kernel_launch

        self.func = func
        self.traits = traits
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
        self.tid = tid if tid is not None else _int(0)
        self.layouts: dict[str, FragmentLayout] = infer_fragment_layouts(func, self.num_threads)
        self.local_buffers: dict[str, Any] = {}
        self.fragment_vars: dict[str, Any] = {}
        self.counter = 0

    # ---- names and buffers -------------------------------------------------
    def fresh(self, stem: str) -> Any:
        self.counter += 1
        return tirx.Var(f"{stem}{self.counter}", "int32")

    def local_array(self, stem: str, shape: Sequence[int], dtype: str) -> Any:
        self.counter += 1
        return tirx.decl_buffer(tuple(shape), dtype, f"{stem}{self.counter}", scope="local")

    def shared_array(self, stem: str, shape: Sequence[int], dtype: str) -> Any:
        self.counter += 1
        return tirx.decl_buffer(tuple(shape), dtype, f"{stem}{self.counter}", scope="shared")

    # ---- iteration drivers -------------------------------------------------
    def owned(self, layout: FragmentLayout, body: Callable[[list[Any], Any], Any]) -> Any:
        """Each thread visits the elements of ``layout`` it holds: body(flat-unflattened index
        over the fragment's dims, local index)."""
        shape = list(layout.shape)
        if layout.kind == ANNOTATED:
            # The annotated map gives (thread, local) for an index: each thread scans the
            # tile for its own elements.
            flat = self.fresh("e")
            index = _unflatten(flat, shape)
            thread, local = layout.index_map.map_indices(index)
            return _loop(flat, layout.numel, _guard(body(index, local), thread == self.tid))
        local_var = self.fresh("l")
        flat, valid = layout.element_of(self.tid, local_var)
        index = _unflatten(flat, shape)
        unroll = layout.local_size <= UNROLL_LIMIT
        return _loop(local_var, layout.local_size, _guard(body(index, local_var), valid), unroll)

    def cooperative(self, extents: Sequence[int], body: Callable[[list[Any]], Any]) -> Any:
        """The block's threads split the elements of an ``extents`` tile."""
        numel = math.prod(extents)
        t = self.num_threads
        if numel <= t:
            index = _unflatten(self.tid, extents)
            return _guard(body(index), None if numel == t else self.tid < numel)
        it = self.fresh("it")
        flat = it * t + self.tid
        index = _unflatten(flat, extents)
        valid = None if numel % t == 0 else flat < numel
        steps = -(-numel // t)
        return _loop(it, steps, _guard(body(index), valid), steps <= 8)

    def every(self, extents: Sequence[int], body: Callable[[list[Any]], Any]) -> Any:
        """Every thread visits every element."""
        loop_vars = [self.fresh("i") for _ in extents]
        stmt = body(list(loop_vars))
        for var, extent in zip(reversed(loop_vars), reversed(list(extents)), strict=True):
            stmt = _loop(var, extent, stmt)
        return stmt

    def drive(
        self,
        operands: Sequence[_Operand],
        extents: Sequence[int],
        body: Callable[[list[Any], Any], Any],
        writer: _Operand | None,
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
                        if not _same_placement(other.layout, layout):
                            raise GpuLoweringError(
                                f"fragments {operand.name} and {other.name} have different "
                                "layouts; a layout conversion is not implemented"
                            )
                return self.owned(layout, squeeze_body)
        if writer is not None and writer.per_thread:
            return self.every(extents, lambda index: body(index, None))
        return self.cooperative(extents, lambda index: body(index, None))

    # ---- tile ops ----------------------------------------------------------
    def lower_copy(self, op: Any) -> Any:
        src, dst = _Operand(op.src, self), _Operand(op.dst, self)
        extents = dst.squeezed
        if extents != src.squeezed:
            raise GpuLoweringError(
                f"T.copy {src.name} -> {dst.name}: tile extents {src.squeezed} and {extents} differ"
            )

        vectorized = self._vector_copy(src, dst)
        if vectorized is not None:
            return vectorized
        if src.partitioned and (
            dst.per_thread
            or (
                dst.partitioned
                and dst.layout is not None
                and src.layout is not None
                and not _same_placement(src.layout, dst.layout)
            )
        ):
            return self._convert_through_shared(src, dst, extents)

        def body(index: list[Any], local: Any) -> Any:
            s_index, d_index = src.expand(index), dst.expand(index)
            value = _cast(src.load(s_index, local), dst.dtype)
            inside = src.inside(s_index)
            if inside is not None:
                value = tirx.if_then_else(inside, value, tirx.const(0, dst.dtype))
            return _guard(dst.store(d_index, value, local), dst.inside(d_index))

        return self.drive([dst, src], extents, body, dst)

    def _convert_through_shared(self, src: _Operand, dst: _Operand, extents: list[int]) -> Any:
        """A copy out of a partitioned fragment into a differently placed one (or into
        every thread's replica): the holders write a shared staging tile, a barrier,
        then the destination's threads read it, and a barrier before it is reused."""
        staging = self.shared_array(f"{src.name}_staging", extents, dst.dtype)

        def publish(index: list[Any], local: Any) -> Any:
            value = _cast(src.load(src.expand(index), local), dst.dtype)
            return tirx.BufferStore(staging, value, list(index))

        def gather(index: list[Any], local: Any) -> Any:
            d_index = dst.expand(index)
            return _guard(
                dst.store(d_index, tirx.BufferLoad(staging, list(index)), local),
                dst.inside(d_index),
            )

        return _seq(
            [
                tirx.AllocBuffer(staging),
                self.drive([src], extents, publish, None),
                barrier(),
                self.drive([dst], extents, gather, dst),
                barrier(),
            ]
        )

    def _vector_copy(self, src: _Operand, dst: _Operand) -> Any | None:
        """A cooperative copy between global/shared tiles in 128-bit vectors, or None
        when the tiles do not allow it (see `_vector_width`)."""
        width = _vector_width(src, dst, self.traits.max_vector_lanes)
        if width is None:
            return None
        extents = [*src.extents[:-1], src.extents[-1] // width]

        def body(index: list[Any]) -> Any:
            column = index[-1] * width
            element = [*index[:-1], column]
            s_full = src.full_index(element)
            d_full = dst.full_index(element)
            s_vector = [*s_full[:-1], tirx.Ramp(s_full[-1], _int(1), width)]
            d_vector = [*d_full[:-1], tirx.Ramp(d_full[-1], _int(1), width)]
            value: Any = tirx.BufferLoad(src.buffer, s_vector)
            # Aligned vectors lie wholly inside or wholly outside the last dim.
            inside = src.inside(element)
            if inside is not None:
                zero = tirx.Broadcast(tirx.const(0, src.dtype), width)
                value = tirx.if_then_else(inside, value, zero)
            return _guard(tirx.BufferStore(dst.buffer, value, d_vector), dst.inside(element))

        return self.cooperative(extents, body)

    def lower_fill(self, op: Any) -> Any:
        dst = _Operand(op.dst, self)

        def body(index: list[Any], local: Any) -> Any:
            d_index = dst.expand(index)
            return _guard(dst.store(d_index, op.value, local), dst.inside(d_index))

        return self.drive([dst], dst.squeezed, body, dst)

    def lower_gemm(self, op: Any) -> Any:
        a, b, c = _Operand(op.a, self), _Operand(op.b, self), _Operand(op.c, self)
        m, n, k = (_const(op.M), _const(op.N), _const(op.K))
        if m is None or n is None or k is None:
            raise GpuLoweringError("T.gemm: expected static M, N, K on GPU targets")
        for operand in (a, b):
            if operand.partitioned:
                raise GpuLoweringError(f"T.gemm: operand {operand.name} must not be partitioned")
        acc = c.dtype
        kv = self.fresh("k")

        def a_at(i: Any) -> Any:
            return a.load([kv, i] if op.transpose_a else [i, kv])

        def b_at(j: Any) -> Any:
            return b.load([j, kv] if op.transpose_b else [kv, j])

        def c_index(index: list[Any]) -> list[Any]:
            return c.expand(index) if c.squeezed == [m, n] else index

        def clear(index: list[Any], local: Any) -> Any:
            return c.store(c_index(index), tirx.const(0, acc), local)

        def update(index: list[Any], local: Any) -> Any:
            i, j = index if len(index) == 2 else (index[0], _int(0))
            full = c_index(index)
            product = _cast(a_at(i), acc) * _cast(b_at(j), acc)
            return c.store(full, c.load(full, local) + product, local)

        if c.squeezed != [m, n] and not (m == 1 or n == 1):
            raise GpuLoweringError(f"T.gemm: C tile {c.extents} does not match M x N = {m}x{n}")
        extents = [m, n]
        parts = []
        if op.clear_accum:
            parts.append(self.drive([c], extents, clear, c))
        parts.append(_loop(kv, k, self.drive([c], extents, update, c)))
        return _seq(parts)

    def _reduce_parts(self, kind: str, dtype: str) -> tuple[Any, Callable[[Any, Any], Any]]:
        if kind in ("sum", "abssum"):
            return tirx.const(0, dtype), lambda x, y: x + y
        if kind in ("max", "absmax"):
            return tirx.min_value(dtype), tirx.max
        if kind == "min":
            return tirx.max_value(dtype), tirx.min
        raise GpuLoweringError(f"T.reduce: unknown kind {kind!r}")

    def lower_reduce(self, op: Any) -> Any:
        src, dst = _Operand(op.src, self), _Operand(op.dst, self)
        dim = op.dim
        if dst.partitioned:
            raise GpuLoweringError(f"T.reduce: destination {dst.name} must not be partitioned")
        acc_dtype = dst.dtype
        identity, combine = self._reduce_parts(op.kind, acc_dtype)
        out_extents = [e for d, e in enumerate(src.extents) if d != dim]
        out_count = math.prod(out_extents)
        absolute = op.kind in ("abssum", "absmax")

        def dst_index(out_index: list[Any]) -> list[Any]:
            if len(dst.extents) == len(src.extents):
                return [*out_index[:dim], _int(0), *out_index[dim:]]
            return out_index

        def element(value: Any) -> Any:
            value = _cast(value, acc_dtype)
            return tirx.abs(value) if absolute else value

        def finish(out_index: list[Any], value: Any) -> Any:
            d_index = dst_index(out_index)
            if not op.clear:
                value = combine(dst.load(d_index), value)
            return _guard(dst.store(d_index, value), dst.inside(d_index))

        if src.per_thread:
            # Every thread holds the whole source: reduce sequentially, no combining.
            total = self.local_array("red_acc", [1], acc_dtype)
            rv = self.fresh("r")

            def per_out(out_index: list[Any]) -> Any:
                s_index = [*out_index[:dim], rv, *out_index[dim:]]
                fold = tirx.BufferStore(
                    total, combine(tirx.BufferLoad(total, [0]), element(src.load(s_index))), [0]
                )
                return _seq(
                    [
                        tirx.BufferStore(total, identity, [0]),
                        _loop(rv, src.extents[dim], fold),
                        finish(out_index, tirx.BufferLoad(total, [0])),
                    ]
                )

            body = self._writer_loop(dst, out_extents, per_out)
            return _seq([tirx.AllocBuffer(total), body])

        partial = self.local_array("red_part", [out_count], acc_dtype)
        init_var = self.fresh("o")
        stmts: list[Any] = [
            tirx.AllocBuffer(partial),
            _loop(
                init_var,
                out_count,
                tirx.BufferStore(partial, identity, [init_var]),
                out_count <= UNROLL_LIMIT,
            ),
        ]

        def out_flat(full_index: list[Any]) -> Any:
            rest = [x for d, x in enumerate(full_index) if d != dim]
            flat: Any = _int(0)
            for x, extent in zip(rest, out_extents, strict=True):
                flat = flat * extent + x if _const(flat) != 0 else x
            return flat

        def fold(index: list[Any], local: Any) -> Any:
            s_index = src.expand(index)
            slot = out_flat(s_index)
            value = element(src.load(s_index, local))
            store = tirx.BufferStore(
                partial, combine(tirx.BufferLoad(partial, [slot]), value), [slot]
            )
            return _guard(store, src.inside(s_index))

        stmts.append(self.drive([src], src.squeezed, fold, None))
        stmts.extend(self._combine_across_threads(partial, out_count, acc_dtype, combine))

        def write(out_index: list[Any]) -> Any:
            flat = out_flat([*out_index[:dim], _int(0), *out_index[dim:]])
            return finish(out_index, tirx.BufferLoad(partial, [flat]))

        stmts.append(self._writer_loop(dst, out_extents, write))
        return _seq(stmts)

    def _writer_loop(
        self, dst: _Operand, extents: list[int], body: Callable[[list[Any]], Any]
    ) -> Any:
        if dst.per_thread:
            return self.every(extents, body)
        return self.cooperative(extents, body)

    def _combine_across_threads(
        self, partial: Any, count: int, dtype: str, combine: Callable[[Any, Any], Any]
    ) -> list[Any]:
        """All-reduce ``partial[0:count]`` over the block; every thread gets the result."""
        t = self.num_threads
        if t == 1:
            return []
        warp = self.traits.warp_size
        if self.traits.warp_shuffles and warp > 1 and t % warp == 0:
            return self._combine_with_shuffles(partial, count, dtype, combine, warp)
        return self._combine_in_shared(partial, count, dtype, combine)

    def _combine_with_shuffles(
        self,
        partial: Any,
        count: int,
        dtype: str,
        combine: Callable[[Any, Any], Any],
        warp: int,
    ) -> list[Any]:
        t = self.num_threads
        lane = self.tid % warp
        warps = t // warp
        d = self.fresh("d")
        value: Any = tirx.BufferLoad(partial, [d])
        steps = []
        offset = warp // 2
        while offset >= 1:
            current = tirx.BufferLoad(partial, [d])
            shuffled = tirx.call_intrin(
                dtype,
                "tirx.tvm_warp_shuffle",
                tirx.const((1 << 32) - 1 if warp <= 32 else 0, "uint32"),
                current,
                tirx.bitwise_xor(lane, _int(offset)),
                _int(warp),
                _int(warp),
            )
            steps.append(tirx.BufferStore(partial, combine(current, shuffled), [d]))
            offset //= 2
        del value
        stmts: list[Any] = [_loop(d, count, _seq(steps), count <= UNROLL_LIMIT)]
        if warps == 1:
            return stmts
        table = self.shared_array("red_warps", [warps, count], dtype)
        d2, w = self.fresh("d"), self.fresh("w")
        warp_id = self.tid // warp
        publish = _guard(
            _loop(
                d2,
                count,
                tirx.BufferStore(table, tirx.BufferLoad(partial, [d2]), [warp_id, d2]),
            ),
            lane == 0,
        )
        d3 = self.fresh("d")
        gather = _loop(
            d3,
            count,
            _seq(
                [
                    tirx.BufferStore(partial, tirx.BufferLoad(table, [_int(0), d3]), [d3]),
                    _loop(
                        w,
                        warps - 1,
                        tirx.BufferStore(
                            partial,
                            combine(
                                tirx.BufferLoad(partial, [d3]),
                                tirx.BufferLoad(table, [w + 1, d3]),
                            ),
                            [d3],
                        ),
                    ),
                ]
            ),
        )
        return [tirx.AllocBuffer(table), *stmts, publish, barrier(), gather, barrier()]

    def _combine_in_shared(
        self, partial: Any, count: int, dtype: str, combine: Callable[[Any, Any], Any]
    ) -> list[Any]:
        t = self.num_threads
        bytes_per = max(1, tvm.DataType(dtype).bits // 8)
        chunk = max(1, min(count, t, REDUCE_TABLE_BYTES // (t * bytes_per)))
        table = self.shared_array("red_table", [chunk, t], dtype)
        result = self.shared_array("red_result", [chunk], dtype)
        rounds = -(-count // chunk)
        r, c1, c2, s = self.fresh("round"), self.fresh("c"), self.fresh("c"), self.fresh("s")
        out1 = r * chunk + c1
        publish = _loop(
            c1,
            chunk,
            _guard(
                tirx.BufferStore(table, tirx.BufferLoad(partial, [out1]), [c1, self.tid]),
                None if count % chunk == 0 else out1 < count,
            ),
        )
        row = self.tid
        fold = _guard(
            _seq(
                [
                    tirx.BufferStore(result, tirx.BufferLoad(table, [row, _int(0)]), [row]),
                    _loop(
                        s,
                        t - 1,
                        tirx.BufferStore(
                            result,
                            combine(
                                tirx.BufferLoad(result, [row]),
                                tirx.BufferLoad(table, [row, s + 1]),
                            ),
                            [row],
                        ),
                    ),
                ]
            ),
            row < chunk,
        )
        out2 = r * chunk + c2
        gather = _loop(
            c2,
            chunk,
            _guard(
                tirx.BufferStore(partial, tirx.BufferLoad(result, [c2]), [out2]),
                None if count % chunk == 0 else out2 < count,
            ),
        )
        body = _seq([publish, barrier(), fold, barrier(), gather, barrier()])
        return [tirx.AllocBuffer(table), tirx.AllocBuffer(result), _loop(r, rounds, body)]

    def lower_cumsum(self, op: Any) -> Any:
        src, dst = _Operand(op.src, self), _Operand(op.dst, self)
        if src.partitioned or dst.partitioned:
            raise GpuLoweringError("T.cumsum: fragment operands must be replicated")
        dim = op.dim
        length = src.extents[dim]
        rows = [e for d, e in enumerate(src.extents) if d != dim]
        running = self.local_array("scan", [1], dst.dtype)
        jv = self.fresh("j")

        def per_row(row_index: list[Any]) -> Any:
            position = (length - 1 - jv) if op.reverse else jv
            full = [*row_index[:dim], position, *row_index[dim:]]
            value = _cast(src.load(full), dst.dtype)
            inside = src.inside(full)
            if inside is not None:
                value = tirx.if_then_else(inside, value, tirx.const(0, dst.dtype))
            add = tirx.BufferStore(running, tirx.BufferLoad(running, [0]) + value, [0])
            out = _guard(dst.store(full, tirx.BufferLoad(running, [0])), dst.inside(full))
            return _seq(
                [
                    tirx.BufferStore(running, tirx.const(0, dst.dtype), [0]),
                    _loop(jv, length, _seq([add, out])),
                ]
            )

        if src.per_thread and dst.per_thread:
            return _seq([tirx.AllocBuffer(running), self.every(rows, per_row)])
        return _seq([tirx.AllocBuffer(running), self._cooperative_scan(src, dst, op, rows)])

    def _cooperative_scan(self, src: _Operand, dst: _Operand, op: Any, rows: list[int]) -> Any:
        """Rows split over threads: scan each row into registers, barrier, write back.

        Reading all of a row before any thread writes keeps shared reads and
        writes apart, so no barrier falls inside the per-thread row guard.
        """
        dim = op.dim
        length = src.extents[dim]
        values = self.local_array("scan_row", [length], dst.dtype)
        running = self.local_array("scan_sum", [1], dst.dtype)
        t = self.num_threads
        row_count = math.prod(rows)
        it = self.fresh("it")
        flat = it * t + self.tid
        row_index = _unflatten(flat, rows)
        valid = None if row_count % t == 0 else flat < row_count
        j1, j2 = self.fresh("j"), self.fresh("j")
        position = (length - 1 - j1) if op.reverse else j1
        full = [*row_index[:dim], position, *row_index[dim:]]
        value = _cast(src.load(full), dst.dtype)
        inside = src.inside(full)
        if inside is not None:
            value = tirx.if_then_else(inside, value, tirx.const(0, dst.dtype))
        scan = _seq(
            [
                tirx.BufferStore(running, tirx.const(0, dst.dtype), [0]),
                _loop(
                    j1,
                    length,
                    _seq(
                        [
                            tirx.BufferStore(running, tirx.BufferLoad(running, [0]) + value, [0]),
                            tirx.BufferStore(values, tirx.BufferLoad(running, [0]), [position]),
                        ]
                    ),
                ),
            ]
        )
        full2 = [*row_index[:dim], j2, *row_index[dim:]]
        write = _loop(
            j2,
            length,
            _guard(dst.store(full2, tirx.BufferLoad(values, [j2])), dst.inside(full2)),
        )
        steps = -(-row_count // t)
        body = _seq([_guard(scan, valid), barrier(), _guard(write, valid), barrier()])
        return _seq([tirx.AllocBuffer(values), tirx.AllocBuffer(running), _loop(it, steps, body)])

    def atomic(self, kind: str, buffer: Any, index: list[Any], value: Any) -> Any:
        dtype = str(buffer.ty.dtype)
        value = _cast(value, dtype)
        address = tirx.address_of(tirx.BufferLoad(buffer, index))
        style = self.traits.atomics
        if style == "cuda":
            name = {"add": "atomicAdd", "max": "tl_atomic_max", "min": "tl_atomic_min"}[kind]
            return tirx.Evaluate(tirx.call_extern(dtype, name, address, value))
        if style == "llvm" and kind == "add":
            return tirx.Evaluate(tirx.call_intrin(dtype, "tirx.atomic_add", address, value))
        raise GpuLoweringError(
            f"T.atomic_{kind} is not implemented on target {self.traits.kind!r} "
            "(CUDA has add/max/min, ROCm add)"
        )

    def lower_atomic(self, op: Any, per_element: bool) -> Any:
        from tl_ir import ops as tile

        dst = _Operand(op.dst, self)
        if dst.scope != "global" and dst.scope not in ("shared", "shared.dyn"):
            raise GpuLoweringError(
                f"T.atomic_{op.kind}: destination {dst.name} must be in global or shared memory"
            )
        if not isinstance(op.value, tile.Region):
            value = op.value
            stmt = _guard(
                self.atomic(
                    op.kind, dst.buffer, dst.full_index([_int(0)] * len(dst.extents)), value
                ),
                dst.inside([_int(0)] * len(dst.extents)),
            )
            return stmt if per_element else _guard(stmt, self.tid == 0)
        src = _Operand(op.value, self)
        extents = dst.squeezed

        def body(index: list[Any], local: Any) -> Any:
            s_index, d_index = src.expand(index), dst.expand(index)
            update = self.atomic(
                op.kind, dst.buffer, dst.full_index(d_index), src.load(s_index, local)
            )
            return _guard(update, _both(dst.inside(d_index), src.inside(s_index)))

        return self.drive([src], extents, body, None)

    # ---- statements --------------------------------------------------------
    def rewrite_expr(self, expr: Any, nest: _Nest | None) -> Any:
        """Rewrite element accesses of fragments in an expression or statement."""
        layouts = self.layouts
        local_buffers = self.local_buffers

        def on_load(node: Any) -> Any:
            if not is_buffer_load(node):
                return node
            name = str(node.source.name)
            target = local_buffers.get(name)
            if target is None or not node.source.same_as(self.fragment_vars[name]):
                return node
            layout = layouts[name]
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
            if target is None or not node.buffer.same_as(self.fragment_vars[name]):
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

    def lower_parallel(self, loop: Any, per_element: bool) -> Any:
        loop_vars, extents, body = parallel_nest(loop)
        driver: FragmentLayout | None = None
        writes_replica = False
        touches_fragment = False
        for name, layout in self.layouts.items():
            accessed = _accesses(body, self.fragment_vars[name])
            if not accessed:
                continue
            touches_fragment = True
            reads_aligned, stores = accessed
            if layout.kind != "replicated" and reads_aligned:
                if driver is not None and not _same_placement(driver, layout):
                    raise GpuLoweringError(
                        f"T.Parallel{tuple(extents)}: fragments {driver.name} and {layout.name} "
                        "are laid out differently (an annotated layout?); converting between "
                        "layouts is not implemented"
                    )
                driver = driver or layout
            if layout.kind == "replicated" and stores:
                writes_replica = True
        stores_private = _stores_private(body)

        def emit(index: list[Any], local: Any | None, element_context: bool) -> Any:
            nest = _Nest(list(zip(loop_vars, index, strict=True)), local)
            inner = self.lower_stmt(body, element_context, nest)
            return self.rewrite_expr(inner, nest)

        if driver is not None:
            layout = driver
            if [e for e in layout.shape] != extents:
                raise GpuLoweringError(
                    f"T.Parallel{tuple(extents)}: extents differ from fragment "
                    f"{layout.name} {layout.shape}"
                )
            return self.owned(layout, lambda index, local: emit(index, local, True))
        if writes_replica or (touches_fragment and stores_private) or stores_private:
            return self.every(extents, lambda index: emit(index, None, per_element))
        return self.cooperative(extents, lambda index: emit(index, None, True))

    def lower_stmt(self, stmt: Any, per_element: bool, nest: _Nest | None) -> Any:
        from tl_ir import ops as tile

        if isinstance(stmt, tirx.SeqStmt):
            return _seq([self.lower_stmt(s, per_element, nest) for s in stmt.seq])
        if isinstance(stmt, tirx.AttrStmt):
            return tirx.AttrStmt(
                stmt.node, stmt.attr_key, stmt.value, self.lower_stmt(stmt.body, per_element, nest)
            )
        if isinstance(stmt, tirx.For):
            if loop_kind_of(stmt) == "parallel" and nest is None:
                return self.lower_parallel(stmt, per_element)
            annotations = {
                k: v
                for k, v in (stmt.annotations.items() if stmt.annotations else [])
                if k not in ("tl.loop_kind", "num_stages")
            }
            kind = stmt.kind
            if loop_kind_of(stmt) == "parallel":
                kind = tirx.ForKind.SERIAL
            return tirx.For(
                stmt.loop_var,
                stmt.min,
                stmt.extent,
                kind,
                self.lower_stmt(stmt.body, per_element, nest),
                annotations=annotations or None,
            )
        if isinstance(stmt, tirx.IfThenElse):
            else_case = (
                self.lower_stmt(stmt.else_case, per_element, nest)
                if stmt.else_case is not None
                else None
            )
            return tirx.IfThenElse(
                stmt.condition,
                self.lower_stmt(stmt.then_case, per_element, nest),
                else_case,
            )
        if isinstance(stmt, tirx.While):
            return tirx.While(stmt.condition, self.lower_stmt(stmt.body, per_element, nest))
        if isinstance(stmt, tirx.AllocBuffer):
            name = str(stmt.buffer.name)
            if name in self.local_buffers and stmt.buffer.same_as(self.fragment_vars[name]):
                return tirx.AllocBuffer(self.local_buffers[name])
            return stmt
        if isinstance(stmt, tirx.Evaluate) and tile.is_tile_op(stmt.value):
            op = tile.describe(stmt.value)
            if isinstance(op, tile.CopyOp):
                return self.lower_copy(op)
            if isinstance(op, tile.FillOp):
                return self.lower_fill(op)
            if isinstance(op, tile.GemmOp):
                return self.lower_gemm(op)
            if isinstance(op, tile.ReduceOp):
                return self.lower_reduce(op)
            if isinstance(op, tile.CumsumOp):
                return self.lower_cumsum(op)
            if isinstance(op, tile.AtomicOp):
                return self.lower_atomic(op, per_element)
            raise GpuLoweringError(f"T.print is not implemented on GPU target {self.traits.kind!r}")
        return stmt

    def lower(self) -> Any:
        for name, layout in self.layouts.items():
            buffer = _find_alloc(self.func.body, name)
            self.fragment_vars[name] = buffer
            shape = layout.shape if layout.kind == "replicated" else (layout.local_size,)
            self.local_buffers[name] = tirx.decl_buffer(
                shape, str(buffer.ty.dtype), name=f"{name}_regs", scope="local"
            )
        body = self.lower_stmt(self.func.body, False, None)
        body = rescope(body, "local.var", "local")
        # Element accesses of replicated fragments outside T.Parallel nests.
        return self.rewrite_expr(body, None)


@dataclass
class _Nest:
    substitution: list[tuple[Any, Any]]
    local: Any | None


def _same_placement(a: FragmentLayout, b: FragmentLayout) -> bool:
    """Whether two layouts put every element on the same thread at the same local index."""
    return (a.kind, a.shape, a.num_threads, a.vector, a.owners) == (
        b.kind,
        b.shape,
        b.num_threads,
        b.vector,
        b.owners,
    )


def _find_alloc(body: Any, name: str) -> Any:
    found: list[Any] = []

    def visit(alloc: Any) -> None:
        if str(alloc.buffer.name) == name and str(alloc.buffer.ty.storage_scope) == FRAGMENT_SCOPE:
            found.append(alloc.buffer)

    tvm_ffi.structural_walk(body, (tirx.AllocBuffer, visit), order="pre")
    return found[0]


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
    found = [False]

    def visit_store(store: Any) -> None:
        if str(store.buffer.ty.storage_scope) in ("local", "local.var"):
            found[0] = True

    tvm_ffi.structural_walk(body, (tirx.BufferStore, visit_store), order="pre")
    return found[0]


def lower_gpu_tile_ops(func: Any, target: Any | None = None) -> Any:
    """Lower one kernel (see the module docstring).

    Args:
        func: the PrimFunc (tile ops, ``T.Kernel``).
        target: the GPU target (its kind and ``thread_warp_size``); None: CUDA.

    Raises:
        GpuLoweringError: a construct the GPU lowering does not support.
        LayoutError: a fragment cannot be laid out.
    """
    from tl_ir.launch import kernel_launch

    if kernel_launch(func) is None:
        return func
    try:
        body = _KernelLowering(func, TargetTraits.of(target)).lower()
    except LayoutError:
        raise
    return func.with_body(body)


@dataclass(frozen=True)
class GpuLowerTileOpsPass(Pass):
    """Turn tile ops and ``T.Parallel`` nests into per-thread code (module docstring)."""

    name: ClassVar[str] = "gpu-lower-tile-ops"

    def run(self, mod: tvm.IRModule, ctx: PassContext) -> tvm.IRModule:
        """Return ``mod`` with every kernel lowered for ``ctx.target``."""
        updates = {}
        for global_var, func in mod.functions.items():
            if isinstance(func, tirx.PrimFunc):
                updates[global_var] = lower_gpu_tile_ops(func, ctx.target)
        return replace_functions(mod, updates)
