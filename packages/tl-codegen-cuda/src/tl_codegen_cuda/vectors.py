"""`cuda-legalize-vectors`: vector accesses only in the widths TVM's CUDA printer writes
correctly.

TVM's CUDA codegen has no vector type for most lane counts and writes a bool vector as
``ushort2..4`` (2 bytes per 1-byte bool): a vectorized store of 4 bools through a
``bool*`` wrote 8 bytes (every other element read back False and 4 bytes past the
group were overwritten), and ``T.vectorized(32)`` of bool, ``T.vectorized(5)`` of
uint32 or ``T.vectorized(16)`` of float16 stopped the codegen ("Cannot convert type
T.boolx32 to CUDA type", "only support even lane for int32 type with lanes > 4").
This pass, on the lowered kernel:

- splits each ``T.vectorized(n)`` loop into a serial loop over vectorized chunks of
  the widest legal width ``v`` (a power of two dividing ``n``) for every dtype the
  body computes or accesses, or makes it serial when there is none (a loop that reads
  or writes bool memory);
- writes each vector store the tile ops built (``O[Ramp(b, 1, 4)] = ...``) that
  reads or writes bool memory, or whose vector type has no CUDA spelling, as an
  unrolled loop over its lanes.

Legal widths (`lanes_supported`) are those whose stores and loads nvcc compiled and
the CPU emulation ran bit for bit: powers of two up to 16 bytes (and 8 lanes of 32-bit
elements); bool vectors in registers up to 4 lanes and never in memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_passes.gpu.errors import GpuLoweringError
from tl_passes.pass_base import PassContext, PrimFuncPass
from tl_passes.vector_lanes import LaneSplitError, lane_of

__all__ = ["CudaLegalizeVectorsPass", "lanes_supported", "legalize_vectors"]

_CANDIDATE_LANES = (16, 8, 4, 2)


def lanes_supported(dtype: str, lanes: int, *, in_memory: bool) -> bool:
    """Whether a vector of ``lanes`` elements of scalar ``dtype`` is printed correctly by
    TVM's CUDA codegen: as a value (``in_memory=False``) or as a load/store of that many
    consecutive elements (``in_memory=True``)."""
    if lanes == 1:
        return True
    parsed = tvm.DataType(dtype)
    if parsed.is_bool:
        return not in_memory and lanes <= 4
    if lanes & (lanes - 1):
        return False
    bits = int(parsed.bits)
    return bits * lanes <= 128 or (bits == 32 and lanes == 8)


def _scalar(dtype: Any) -> str:
    parsed = tvm.DataType(str(dtype))
    return str(parsed.with_lanes(1)) if parsed.lanes != 1 else str(dtype)


def _dtype(expr: Any) -> str | None:
    dtype = getattr(getattr(expr, "ty", None), "dtype", None)
    return None if dtype is None else str(dtype)


def _buffer_dtype(access: Any) -> str:
    """The element dtype of the buffer a load (``TensorLoad``) or store reads or writes."""
    buffer = access.buffer if isinstance(access, tirx.BufferStore) else access.source
    return _scalar(buffer.dtype)


def _uses(expr: Any, var: Any) -> bool:
    found: list[bool] = []

    def visit(node: Any) -> None:
        if node.same_as(var):
            found.append(True)

    tvm_ffi.structural_walk(expr, (tvm.ir.Var, visit))
    return bool(found)


def _loop_dtypes(loop: tirx.For) -> tuple[set[str], set[str]]:
    """The scalar dtypes ``loop``'s body computes (values) and those of the buffers it
    reads or writes at an index that depends on the loop variable (memory). Index
    arithmetic is not a value: TVM's codegen never declares a vector of it."""
    values: set[str] = set()
    memory: set[str] = set()

    def collect(root: Any, index_mode: bool) -> None:
        def access(node: Any) -> tvm_ffi.WalkResult:
            dtype = _buffer_dtype(node)
            if any(_uses(index, loop.loop_var) for index in node.indices):
                memory.add(dtype)
            values.add(dtype)
            if isinstance(node, tirx.BufferStore):
                collect(node.value, False)
            for index in node.indices:
                collect(index, True)
            return tvm_ffi.WalkResult.SKIP

        def expression(node: Any) -> None:
            dtype = _dtype(node) if isinstance(node, tirx.Expr) else None
            if not index_mode and dtype is not None and dtype not in ("handle", "void"):
                values.add(_scalar(dtype))

        tvm_ffi.structural_walk(
            root,
            [((tvm.ir.TensorLoad, tirx.BufferStore), access), (object, expression)],
            order="pre",
        )

    collect(loop.body, False)
    return values, memory


def _loop_lanes(loop: tirx.For, extent: int) -> int:
    """The widest legal vector width dividing ``extent`` for ``loop``'s body (1: none)."""
    values, memory = _loop_dtypes(loop)
    for lanes in (extent, *_CANDIDATE_LANES):
        if lanes > extent or extent % lanes:
            continue
        if all(lanes_supported(d, lanes, in_memory=False) for d in values) and all(
            lanes_supported(d, lanes, in_memory=True) for d in memory
        ):
            return lanes
    return 1


def _split_loop(loop: tirx.For) -> tirx.Stmt:
    extent = loop.extent
    if loop.kind != tirx.ForKind.VECTORIZED or not isinstance(extent, tirx.IntImm):
        return loop
    total = int(extent.value)
    lanes = _loop_lanes(loop, total)
    if lanes == total:
        return loop
    var = loop.loop_var
    if lanes == 1:
        return tirx.For(
            var, loop.min, extent, tirx.ForKind.SERIAL, loop.body, None, loop.annotations
        )
    dtype = str(var.ty.dtype)
    outer = tirx.Var(f"{var.name}_chunk", dtype)
    inner = tirx.Var(f"{var.name}_lane", dtype)
    index = loop.min + outer * tirx.const(lanes, dtype) + inner
    body = tvm_ffi.structural_map(loop.body, (tvm.ir.Var, lambda v: index if v.same_as(var) else v))
    zero = tirx.const(0, dtype)
    vectorized = tirx.For(inner, zero, tirx.const(lanes, dtype), tirx.ForKind.VECTORIZED, body)
    return tirx.For(outer, zero, tirx.const(total // lanes, dtype), tirx.ForKind.SERIAL, vectorized)


def _lane(expr: Any, k: Any) -> Any:
    """Lane ``k`` (a scalar index expression) of vector ``expr``."""
    try:
        return lane_of(expr, k)
    except LaneSplitError as error:
        raise GpuLoweringError(
            f"cuda-legalize-vectors: cannot split a {_dtype(error.node)} vector "
            f"{type(error.node).__name__} into lanes (expected a load, ramp, broadcast, "
            f"cast, arithmetic, select or intrinsic call): {error.node}"
        ) from None


def _lanes_of(indices: Any) -> int:
    return max((tvm.DataType(_dtype(i) or "int32").lanes for i in indices), default=1)


def _store_is_legal(store: tirx.BufferStore) -> bool:
    """Whether every vector ``store`` reads, writes or computes has a CUDA spelling
    (index arithmetic aside: TVM's codegen never declares a vector of it)."""
    ok = True

    def check(root: Any, index_mode: bool) -> None:
        def access(node: Any) -> tvm_ffi.WalkResult:
            nonlocal ok
            if not lanes_supported(_buffer_dtype(node), _lanes_of(node.indices), in_memory=True):
                ok = False
            if isinstance(node, tirx.BufferStore):
                check(node.value, False)
            for index in node.indices:
                check(index, True)
            return tvm_ffi.WalkResult.SKIP

        def expression(node: Any) -> None:
            nonlocal ok
            dtype = _dtype(node) if isinstance(node, tirx.Expr) else None
            if index_mode or dtype is None or dtype in ("handle", "void"):
                return
            lanes = int(tvm.DataType(dtype).lanes)
            if not lanes_supported(_scalar(dtype), lanes, in_memory=False):
                ok = False

        tvm_ffi.structural_walk(
            root,
            [((tvm.ir.TensorLoad, tirx.BufferStore), access), (object, expression)],
            order="pre",
        )

    check(store, False)
    return ok


def _split_store(store: tirx.BufferStore) -> tirx.Stmt:
    lanes = _lanes_of(store.indices)
    if lanes == 1 or _store_is_legal(store):
        return store
    index_dtype = _dtype(store.indices[-1]) or "int32"
    k = tirx.Var("lane", _scalar(index_dtype))
    body = tirx.BufferStore(
        store.buffer, _lane(store.value, k), [_lane(i, k) for i in store.indices]
    )
    zero = tirx.const(0, k.ty.dtype)
    return tirx.For(k, zero, tirx.const(lanes, k.ty.dtype), tirx.ForKind.UNROLLED, body)


def legalize_vectors(stmt: tirx.Stmt) -> tirx.Stmt:
    """``stmt`` with its vector loops and vector stores in CUDA-legal widths (module
    docstring)."""
    mapped: tirx.Stmt = tvm_ffi.structural_map(
        stmt, [(tirx.For, _split_loop), (tirx.BufferStore, _split_store)], order="post"
    )
    return mapped


@dataclass(frozen=True)
class CudaLegalizeVectorsPass(PrimFuncPass):
    """Vector loops and accesses in CUDA-legal widths (module docstring)."""

    name: ClassVar[str] = "cuda-legalize-vectors"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its vectors in widths TVM's CUDA codegen prints correctly."""
        return legalize_vectors(body)
