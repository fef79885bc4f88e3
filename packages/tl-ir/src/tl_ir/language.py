"""The kernel language, imported by kernel authors as ``T`` (``import tl_ir.language as T``).

It re-exports TVMScript's TIR names (``tvm.script.tirx``: ``T.float32``, ``T.exp``,
``T.if_then_else``...) and adds or replaces the TileLang names of LANGUAGE.md: the
kernel launch, tile allocations in their scopes, tile loops, and the tile ops,
which become ``tl.*`` calls described by `tl_ir.ops`.

Representation choices (also in docs/language.md):

* ``T.Kernel`` binds ``blockIdx.*`` / ``threadIdx.*`` through ``launch_thread``
  (``thread_extent`` attributes); see `tl_ir.launch.kernel_launch`.
* loops carry ``{"tl.loop_kind": kind}``; ``T.Pipelined`` adds ``"num_stages"``.
* scopes: ``alloc_shared`` -> ``shared.dyn``, ``alloc_fragment`` -> ``local.fragment``,
  ``alloc_local`` -> ``local``, ``alloc_var`` -> ``local.var`` (shape ``(1,)``).
* symbolic dims are ``int32`` Vars.
"""

# ruff: noqa: F403, F405
from __future__ import annotations

import builtins as _builtins
import contextlib
import linecache
import sys
from collections.abc import Callable, Sequence
from typing import Any

import tvm
from tvm import tirx
from tvm.script import tirx as _tvm_T
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as _IB
from tvm.script.tirx import *
from tvm.sym import Analyzer as _Analyzer

from tl_ir import ops as _ops
from tl_ir.dtypes import DTYPE_NAMES as _DTYPE_NAMES
from tl_ir.dtypes import bits as _dtype_bits
from tl_ir.dtypes import normalize_dtype as _normalize_dtype
from tl_ir.errors import (
    KernelSyntaxError,
    KernelTypeError,
    ScopeError,
    ShapeMismatchError,
    TileLangError,
    UnknownDtypeError,
    UnsupportedError,
)
from tl_ir.frontend import current_state as _current_state
from tl_ir.frontend import prim_func
from tl_ir.frontend import symbolic as _symbolic
from tl_ir.launch import LOOP_KIND_KEY as _LOOP_KIND_KEY
from tl_ir.launch import NUM_STAGES_KEY as _NUM_STAGES_KEY
from tl_ir.ops import Region as _Region
from tl_ir.scopes import FRAGMENT as _FRAGMENT
from tl_ir.scopes import LOCAL as _LOCAL
from tl_ir.scopes import LOCAL_VAR as _LOCAL_VAR
from tl_ir.scopes import SHARED_DYN as _SHARED_DYN

_scalar_wrapper = _tvm_T.scalar_wrapper

# ---------------------------------------------------------------- params and dims


def _expr_dtype(expr: Any) -> str:
    dtype = getattr(expr, "dtype", None)
    if dtype is None:
        dtype = getattr(getattr(expr, "ty", None), "dtype", "")
    return str(dtype)


def _check_shape(shape: Any, where: str) -> tuple[Any, ...]:
    dims = tuple(shape) if isinstance(shape, list | tuple) else (shape,)
    if not dims:
        raise KernelTypeError(f"{where}: expected a non-empty shape, got {shape!r}")
    for dim in dims:
        ok = (isinstance(dim, int) and not isinstance(dim, _builtins.bool)) or (
            tvm.ir.is_prim_expr(dim) and "int" in _expr_dtype(dim)
        )
        if not ok:
            raise KernelTypeError(
                f"{where}: expected every dim to be an int or an integer expression, "
                f"got {dim!r} ({type(dim).__name__}) in shape {shape!r}"
            )
        value = _ops.const_int(dim)
        if value is not None and value <= 0:
            raise KernelTypeError(f"{where}: expected positive dims, got {value} in {shape!r}")
    return dims


def _locate_at_caller(err: TileLangError, depth: int) -> None:
    frame = sys._getframe(depth)
    filename, lineno = frame.f_code.co_filename, frame.f_lineno
    err.locate(filename, lineno, linecache.getline(filename, lineno) or None)


class _TensorAnnotation:
    """``T.Tensor((M, K), dtype)``: the annotation of a tensor parameter (alias ``T.Buffer``)."""

    def __call__(self, shape: Any, dtype: Any = "float32", **kwargs: Any) -> Any:
        return self._make(shape, dtype, kwargs)

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], list | tuple):
            return self._make(item[0], item[1], {})
        return self._make(item, "float32", {})

    def _make(self, shape: Any, dtype: Any, kwargs: dict[str, Any]) -> Any:
        try:
            dims = _check_shape(shape, "T.Tensor(shape, dtype)")
            name = _normalize_dtype(dtype)
            # Kernels assume only element alignment of a tensor parameter's data pointer
            # (see docs/language.md): callers' ordinary arrays (numpy's sit 16 bytes past a
            # 64-byte boundary) then run without a copy. ``align=`` asks for more.
            kwargs.setdefault("align", param_alignment(name))
            return _tvm_T.Buffer(dims, name, **kwargs)
        except TileLangError as err:
            if _current_state() is None:
                # Annotations are evaluated when Python defines the kernel function,
                # before the parser runs: locate the error at the annotation's line
                # (frames: _locate_at_caller, _make, __call__/__getitem__, the kernel).
                _locate_at_caller(err, depth=3)
            raise


def param_alignment(dtype: Any) -> int:
    """The byte alignment a tensor parameter of ``dtype`` declares unless ``align=`` is given.

    It is the element size in bytes (1 for sub-byte types such as ``bool``), so any array
    whose elements are naturally aligned is accepted without a copy.

    Raises:
        UnknownDtypeError: ``dtype`` is not a dtype of the language.
    """
    return _builtins.max(1, _dtype_bits(dtype) // 8)


#: Tensor parameter annotation: ``A: T.Tensor((M, K), "float16")``.
Tensor = _TensorAnnotation()
Buffer = Tensor


def symbolic(name: str, dtype: str = "int32") -> Any:
    """A named symbolic dim (an ``int32`` Var) usable in shapes; the same name in one
    kernel build gives the same Var. Raises `KernelTypeError` for a bad name."""
    return _symbolic(name, dtype)


dynamic = symbolic

# ---------------------------------------------------------------- kernel launch

_BLOCK_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
_THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
_THREAD_NAMES = ("tx", "ty", "tz")


def _extent(value: Any, where: str) -> Any:
    if isinstance(value, _builtins.bool) or not (
        isinstance(value, int) or tvm.ir.is_prim_expr(value)
    ):
        raise KernelTypeError(f"{where}: expected an int or an integer expression, got {value!r}")
    const = _ops.const_int(value)
    if const is not None and const <= 0:
        raise KernelTypeError(f"{where}: expected a positive extent, got {const}")
    return value


class Kernel:
    """``with T.Kernel(gx, gy=..., gz=..., threads=n or (x, y, z)) as (bx, by):``

    Launches a grid of 1-3 dims with ``threads`` threads per block (default 128) and
    binds the block indices (one Var for one grid dim, else a tuple). Exactly one
    ``T.Kernel`` per ``@T.prim_func``.

    Raises:
        KernelTypeError: no grid extent, more than 3, or non-integer extents.
        ScopeError: used outside ``@T.prim_func``.
        UnsupportedError: a second or nested ``T.Kernel``.
    """

    def __init__(self, *grid: Any, threads: Any = 128, prelude: Any = None) -> None:
        if not 1 <= len(grid) <= 3:
            raise KernelTypeError(f"T.Kernel(*grid): expected 1 to 3 grid extents, got {len(grid)}")
        if prelude is not None:
            raise UnsupportedError("T.Kernel(prelude=...) is not supported")
        thread_dims = tuple(threads) if isinstance(threads, list | tuple) else (threads,)
        if not 1 <= len(thread_dims) <= 3:
            raise KernelTypeError(
                f"T.Kernel(threads=...): expected an int or 1 to 3 extents, got {threads!r}"
            )
        self.grid = tuple(_extent(g, "T.Kernel grid extent") for g in grid)
        self.threads = tuple(_extent(t, "T.Kernel threads") for t in thread_dims)
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> Any:
        state = _current_state()
        if state is None:
            raise ScopeError("T.Kernel is only allowed inside a @T.prim_func body")
        if state.kernel_depth or state.kernel_count:
            raise UnsupportedError(
                "only one T.Kernel per @T.prim_func is supported (found a second or nested one)"
            )
        block_vars = [
            self._stack.enter_context(_IB.launch_thread(tag, ext))
            for tag, ext in zip(_BLOCK_TAGS, self.grid, strict=False)
        ]
        thread_vars = [
            self._stack.enter_context(_IB.launch_thread(tag, ext))
            for tag, ext in zip(_THREAD_TAGS, self.threads, strict=False)
        ]
        for name, var in zip(_THREAD_NAMES, thread_vars, strict=False):
            IRBuilder.name(name, var)
        state.kernel_depth += 1
        state.kernel_count += 1
        state.block_vars = tuple(block_vars)
        state.thread_vars = tuple(thread_vars)
        return block_vars[0] if len(block_vars) == 1 else tuple(block_vars)

    def __exit__(self, *exc: Any) -> bool | None:
        state = _current_state()
        if state is not None:
            state.kernel_depth -= 1
        return self._stack.__exit__(*exc)


def _active_kernel(where: str) -> Any:
    state = _current_state()
    if state is None or not state.kernel_depth:
        raise ScopeError(f"{where} is only allowed inside `with T.Kernel(...)`")
    return state


def get_thread_binding(dim: int = 0) -> Any:
    """The thread index Var of dim ``dim`` (0 = x) of the enclosing ``T.Kernel``."""
    state = _active_kernel("T.get_thread_binding")
    if not 0 <= dim < len(state.thread_vars):
        raise KernelTypeError(
            f"T.get_thread_binding(dim): the kernel binds {len(state.thread_vars)} thread "
            f"dim(s), got dim={dim}"
        )
    return state.thread_vars[dim]


def get_block_binding(dim: int = 0) -> Any:
    """The block index Var of dim ``dim`` (0 = x) of the enclosing ``T.Kernel``."""
    state = _active_kernel("T.get_block_binding")
    if not 0 <= dim < len(state.block_vars):
        raise KernelTypeError(
            f"T.get_block_binding(dim): the kernel binds {len(state.block_vars)} block "
            f"dim(s), got dim={dim}"
        )
    return state.block_vars[dim]


# ---------------------------------------------------------------- allocations


def _alloc(shape: Any, dtype: Any, scope: str, where: str) -> Any:
    dims = _check_shape(shape, where)
    return _IB.alloc_buffer(dims, _normalize_dtype(dtype), scope=scope)


def alloc_shared(shape: Any, dtype: Any, scope: str = _SHARED_DYN) -> Any:
    """A block-shared tile (scope ``shared.dyn``); only inside ``T.Kernel``."""
    _active_kernel("T.alloc_shared (a block-shared tile)")
    return _alloc(shape, dtype, scope, "T.alloc_shared(shape, dtype)")


def alloc_fragment(shape: Any, dtype: Any, scope: str = _FRAGMENT) -> Any:
    """A tile distributed over the block's threads (scope ``local.fragment``); only
    inside ``T.Kernel``."""
    _active_kernel("T.alloc_fragment (a fragment is distributed over a block's threads)")
    return _alloc(shape, dtype, scope, "T.alloc_fragment(shape, dtype)")


def alloc_local(shape: Any, dtype: Any, scope: str = _LOCAL) -> Any:
    """A thread-private array (scope ``local``)."""
    return _alloc(shape, dtype, scope, "T.alloc_local(shape, dtype)")


def alloc_var(dtype: Any, init: Any = None, scope: str = _LOCAL_VAR) -> Any:
    """A thread-private scalar variable (a ``(1,)`` buffer of scope ``local.var``).

    Reading the name gives its current value; ``x = expr`` stores into it. With
    ``init`` the variable is set to ``init`` where it is declared.
    """
    name = _normalize_dtype(dtype)
    buffer = _IB.alloc_buffer((1,), name, scope=scope)
    if init is not None:
        _IB.buffer_store(buffer, _as_value(init, name), [0])
    return _scalar_wrapper(tirx.BufferLoad(buffer, [0]))


# ---------------------------------------------------------------- loops


def _loop_annotations(kind: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    annotations: dict[str, Any] = {_LOOP_KIND_KEY: kind}
    if extra:
        annotations.update(extra)
    return annotations


def serial(start: Any, stop: Any = None, step: Any = None, *, annotations: Any = None) -> Any:
    """``for i in T.serial(n)`` / ``T.serial(start, stop, step)``: a sequential loop."""
    return _IB.serial(start, stop, step=step, annotations=_loop_annotations("serial", annotations))


def unroll(start: Any, stop: Any = None, step: Any = None, *, annotations: Any = None) -> Any:
    """``for i in T.unroll(n)``: a loop the compiler unrolls."""
    return _IB.unroll(start, stop, step=step, annotations=_loop_annotations("unroll", annotations))


def vectorized(start: Any, stop: Any = None, step: Any = None, *, annotations: Any = None) -> Any:
    """``for i in T.vectorized(n)``: a loop turned into vector operations."""
    return _IB.vectorized(
        start, stop, step=step, annotations=_loop_annotations("vectorized", annotations)
    )


def Parallel(*extents: Any) -> Any:
    """``for i, j in T.Parallel(M, N)``: element-parallel loops over a tile, distributed
    across threads (GPU) or lanes and cores (CPU). Extents must be compile-time constants.

    Raises:
        KernelTypeError: no extent or a non-constant extent.
    """
    if not extents:
        raise KernelTypeError("T.Parallel(*extents): expected at least one extent")
    for position, extent in enumerate(extents):
        if _ops.const_int(extent) is None:
            raise KernelTypeError(
                f"T.Parallel(*extents): extent {position} must be a compile-time constant "
                f"(the loop is distributed over a tile), got the run-time value {extent}; "
                "use T.serial for run-time trip counts"
            )
    annotations = _loop_annotations("parallel")
    if len(extents) == 1:
        return _IB.serial(0, extents[0], annotations=annotations)
    state = _current_state()
    if state is None:
        raise ScopeError("T.Parallel is only allowed inside a @T.prim_func body")
    frame = _IB.grid(*extents)
    for var in frame.vars:
        state.loop_annotations[var] = annotations
    return frame


def Pipelined(
    start: Any,
    stop: Any = None,
    num_stages: int = 0,
    order: Any = None,
    stage: Any = None,
    sync: Any = None,
    group: Any = None,
) -> Any:
    """``for k in T.Pipelined(n, num_stages=s)``: a loop software-pipelined over ``s``
    stages (copies of later iterations overlap compute of the current one).

    Raises:
        KernelTypeError: ``num_stages`` is not a non-negative int.
        UnsupportedError: ``order``/``stage``/``sync``/``group`` are given.
    """
    if isinstance(num_stages, _builtins.bool) or not isinstance(num_stages, int) or num_stages < 0:
        raise KernelTypeError(
            f"T.Pipelined(num_stages=...): expected a non-negative int, got {num_stages!r}"
        )
    for name, value in (("order", order), ("stage", stage), ("sync", sync), ("group", group)):
        if value is not None:
            raise UnsupportedError(f"T.Pipelined({name}=...) is not supported")
    return _IB.serial(
        start,
        stop,
        annotations=_loop_annotations("pipelined", {_NUM_STAGES_KEY: num_stages}),
    )


# ---------------------------------------------------------------- tile operands


def _as_value(value: Any, dtype: str) -> Any:
    if isinstance(value, _scalar_wrapper):
        value = value.scalar
    if isinstance(value, _builtins.bool | int | float):
        return tirx.const(value, dtype)
    if not tvm.ir.is_prim_expr(value):
        raise KernelTypeError(f"expected a scalar value or expression, got {value!r}")
    if _expr_dtype(value) != dtype:
        return tirx.Cast(dtype, value)
    return value


def _describe_operand(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"[:200]


class _Element:
    """An element access ``A[i, j]`` used as a tile operand: the anchor of a tile."""

    def __init__(self, buffer: Any, indices: Sequence[Any]) -> None:
        self.buffer = buffer
        self.indices = tuple(indices)


def _operand(value: Any, where: str, access: int) -> _Region | _Element:
    if isinstance(value, _scalar_wrapper):
        value = value.scalar
    if _ops.is_buffer(value):
        shape = tuple(value.ty.shape)
        zeros = tuple(tirx.IntImm("int32", 0) for _ in shape)
        return _Region(value, zeros, shape, access)
    if isinstance(value, tvm.ir.TensorRegion):
        ranges = list(value.region)
        return _Region(
            value.source,
            tuple(r.min for r in ranges),
            tuple(r.extent for r in ranges),
            access,
        )
    if isinstance(value, tvm.ir.TensorLoad):
        return _Element(value.source, list(value.indices))
    raise KernelTypeError(
        f"{where}: expected a buffer, a region A[i:i+m, ...] or an element access A[i, j]; "
        f"got {_describe_operand(value)}"
    )


def _anchor(element: _Element, extents: Sequence[Any], access: int, where: str) -> _Region:
    rank = len(element.indices)
    extents = list(extents)
    while len(extents) > rank and _ops.const_int(extents[0]) == 1:
        extents.pop(0)
    if len(extents) > rank:
        raise ShapeMismatchError(
            f"{where}: the element access {element.buffer.name}[...] has {rank} index(es) "
            f"but the other operand's tile has {len(extents)} non-unit dims "
            f"{_fmt(extents)}; they cannot match"
        )
    full = [tirx.IntImm("int32", 1)] * (rank - len(extents)) + extents
    return _Region(element.buffer, element.indices, tuple(full), access)


def _fmt(extents: Sequence[Any]) -> str:
    return "(" + ", ".join(str(e) for e in extents) + ")"


def _provably_different(a: Any, b: Any) -> bool:
    ca, cb = _ops.const_int(a), _ops.const_int(b)
    if ca is not None and cb is not None:
        return ca != cb
    diff = _ops.const_int(_Analyzer().simplify(a - b))
    return diff is not None and diff != 0


def _check_same_tile(src: _Region, dst: _Region, where: str) -> None:
    s = [e for e in src.extents if _ops.const_int(e) != 1]
    d = [e for e in dst.extents if _ops.const_int(e) != 1]
    all_const = all(_ops.const_int(e) is not None for e in (*s, *d))
    mismatch = (len(s) != len(d) and all_const) or (
        len(s) == len(d) and any(_provably_different(a, b) for a, b in zip(s, d, strict=False))
    )
    if mismatch:
        raise ShapeMismatchError(
            f"{where}: tile shapes cannot match: source {src.buffer.name} tile is "
            f"{_fmt(src.extents)}, destination {dst.buffer.name} tile is {_fmt(dst.extents)}; "
            "expected the same extents (unit dims aside)"
        )


def _region_of(value: Any, where: str, access: int) -> _Region:
    operand = _operand(value, where, access)
    if isinstance(operand, _Element):
        return _Region(
            operand.buffer,
            operand.indices,
            tuple(tirx.IntImm("int32", 1) for _ in operand.indices),
            access,
        )
    return operand


def _tile_of(value: Any, where: str, access: int) -> _Region:
    operand = _operand(value, where, access)
    if isinstance(operand, _Element):
        raise KernelTypeError(
            f"{where}: expected a whole tile (a buffer or a region A[i:i+m, ...]), got the "
            f"element access {operand.buffer.name}[...]"
        )
    return operand


# ---------------------------------------------------------------- tile ops


def copy(src: Any, dst: Any) -> Any:
    """Copy the ``src`` tile into the ``dst`` tile.

    Each side is a buffer, a region ``A[i:i+m, j:j+n]`` or an element access
    ``A[i, j]`` meaning "the tile anchored here, shaped like the other side".

    Raises:
        KernelTypeError: an operand is not a buffer, region or element access.
        ShapeMismatchError: the two tiles cannot have the same extents.
    """
    s = _operand(src, "T.copy(src, dst): src", _ops.ACCESS_READ)
    d = _operand(dst, "T.copy(src, dst): dst", _ops.ACCESS_WRITE)
    if isinstance(s, _Element) and isinstance(d, _Element):
        s = _region_of(src, "T.copy", _ops.ACCESS_READ)
        d = _region_of(dst, "T.copy", _ops.ACCESS_WRITE)
    elif isinstance(s, _Element):
        assert isinstance(d, _Region)
        s = _anchor(s, d.extents, _ops.ACCESS_READ, "T.copy(src, dst)")
    elif isinstance(d, _Element):
        d = _anchor(d, s.extents, _ops.ACCESS_WRITE, "T.copy(src, dst)")
    assert isinstance(s, _Region) and isinstance(d, _Region)
    _check_same_tile(s, d, "T.copy(src, dst)")
    return _ops.make_call("tl.copy", s, d)


def fill(buffer: Any, value: Any) -> Any:
    """Set every element of a buffer or region to ``value`` (cast to its dtype)."""
    dst = _region_of(buffer, "T.fill(buffer, value): buffer", _ops.ACCESS_WRITE)
    return _ops.make_call("tl.fill", dst, _as_value(value, dst.dtype))


def clear(buffer: Any) -> Any:
    """Set every element of a buffer or region to zero."""
    return fill(buffer, 0)


def _matrix(region: _Region, name: str) -> tuple[Any, Any]:
    extents = list(region.extents)
    while len(extents) > 2 and _ops.const_int(extents[0]) == 1:
        extents.pop(0)
    if len(extents) != 2:
        raise ShapeMismatchError(
            f"T.gemm: {name} must be a 2-D tile, got {region.buffer.name} with tile "
            f"{_fmt(region.extents)}"
        )
    return extents[0], extents[1]


def gemm(
    A: Any,
    B: Any,
    C: Any,
    transpose_A: bool = False,
    transpose_B: bool = False,
    clear_accum: bool = False,
) -> Any:
    """``C += op(A) @ op(B)`` on tiles; ``op`` transposes when asked; accumulation in
    C's dtype; with ``clear_accum`` C is zeroed first.

    Raises:
        KernelTypeError: an operand is not a tile.
        ShapeMismatchError: the inner dims of A and B or the dims of C disagree.
    """
    a = _tile_of(A, "T.gemm: A", _ops.ACCESS_READ)
    b = _tile_of(B, "T.gemm: B", _ops.ACCESS_READ)
    c = _tile_of(C, "T.gemm: C", _ops.ACCESS_READ_WRITE)
    a0, a1 = _matrix(a, "A")
    b0, b1 = _matrix(b, "B")
    c0, c1 = _matrix(c, "C")
    m, ka = (a1, a0) if transpose_A else (a0, a1)
    kb, n = (b1, b0) if transpose_B else (b0, b1)
    shapes = (
        f"A {a.buffer.name} is {_fmt((a0, a1))}{' (transposed)' if transpose_A else ''}, "
        f"B {b.buffer.name} is {_fmt((b0, b1))}{' (transposed)' if transpose_B else ''}, "
        f"C {c.buffer.name} is {_fmt((c0, c1))}"
    )
    if _provably_different(ka, kb):
        raise ShapeMismatchError(
            f"T.gemm: inner dims disagree: expected A's K ({ka}) to equal B's K ({kb}); {shapes}"
        )
    if _provably_different(m, c0) or _provably_different(n, c1):
        raise ShapeMismatchError(f"T.gemm: expected C to be M x N = {_fmt((m, n))}; {shapes}")
    return _ops.make_call(
        "tl.gemm",
        a,
        b,
        c,
        tirx.IntImm("int32", int(_builtins.bool(transpose_A))),
        tirx.IntImm("int32", int(_builtins.bool(transpose_B))),
        tirx.IntImm("int32", int(_builtins.bool(clear_accum))),
        _as_index(c0),
        _as_index(c1),
        _as_index(ka),
    )


def _as_index(value: Any) -> Any:
    return tirx.IntImm("int32", value) if isinstance(value, int) else value


def _normalize_dim(dim: Any, rank: int, where: str) -> int:
    if isinstance(dim, _builtins.bool) or not isinstance(dim, int):
        raise KernelTypeError(f"{where}: expected dim to be an int, got {dim!r}")
    if not -rank <= dim < rank:
        raise KernelTypeError(f"{where}: dim {dim} is out of range for a {rank}-D tile")
    return dim % rank


def reduce(src: Any, dst: Any, dim: Any, kind: Any, clear: bool = True) -> Any:
    """Reduce the ``src`` tile along ``dim`` into ``dst`` with ``kind`` (one of
    ``sum max min abssum absmax``); ``clear=False`` folds into dst's old values.

    ``dst`` has ``src``'s shape without ``dim`` (or with ``dim`` of extent 1).
    TileLang's argument order ``reduce(src, dst, kind, dim)`` is accepted too.

    Raises:
        KernelTypeError: unknown kind, bad dim, non-tile operands.
        ShapeMismatchError: dst's shape does not fit.
    """
    if isinstance(dim, str) and not isinstance(kind, str):
        dim, kind = kind, dim
    where = "T.reduce(src, dst, dim, kind)"
    if kind not in _ops.REDUCE_KINDS:
        raise KernelTypeError(
            f"{where}: expected kind to be one of {', '.join(_ops.REDUCE_KINDS)}, got {kind!r}"
        )
    s = _tile_of(src, f"{where}: src", _ops.ACCESS_READ)
    d = _tile_of(dst, f"{where}: dst", _ops.ACCESS_READ_WRITE if not clear else _ops.ACCESS_WRITE)
    axis = _normalize_dim(dim, s.rank, where)
    kept = [e for i, e in enumerate(s.extents) if i != axis]
    d_ext = list(d.extents)
    if len(d_ext) == s.rank:
        if _ops.const_int(d_ext[axis]) != 1:
            raise ShapeMismatchError(
                f"{where}: dst {d.buffer.name} {_fmt(d_ext)} has src's rank, so its dim "
                f"{axis} must be 1; src {s.buffer.name} is {_fmt(s.extents)}"
            )
        d_ext.pop(axis)
    if len(d_ext) != len(kept) or any(
        _provably_different(a, b) for a, b in zip(kept, d_ext, strict=False)
    ):
        raise ShapeMismatchError(
            f"{where}: reducing {s.buffer.name} {_fmt(s.extents)} along dim {axis} gives "
            f"{_fmt(kept)}, but dst {d.buffer.name} is {_fmt(d.extents)}"
        )
    return _ops.make_call(
        "tl.reduce",
        s,
        d,
        tvm.ir.StringImm(kind),
        tirx.IntImm("int32", axis),
        tirx.IntImm("int32", int(_builtins.bool(clear))),
    )


def _reducer(kind: str) -> Callable[..., Any]:
    def reducer(src: Any, dst: Any, dim: int = -1, clear: bool = True) -> Any:
        return reduce(src, dst, dim, kind, clear)

    reducer.__name__ = f"reduce_{kind}"
    reducer.__doc__ = f"``T.reduce(src, dst, dim, {kind!r}, clear)`` (dim defaults to -1)."
    return reducer


reduce_sum = _reducer("sum")
reduce_max = _reducer("max")
reduce_min = _reducer("min")
reduce_abssum = _reducer("abssum")
reduce_absmax = _reducer("absmax")


def cumsum(src: Any, dst: Any = None, dim: int = 0, reverse: bool = False) -> Any:
    """Inclusive prefix sum of ``src`` along ``dim`` into ``dst`` (in place when ``dst``
    is None); from the end when ``reverse``.

    Raises:
        ShapeMismatchError: ``dst`` is not shaped like ``src``.
    """
    where = "T.cumsum(src, dst, dim, reverse)"
    s = _tile_of(src, f"{where}: src", _ops.ACCESS_READ)
    d = _tile_of(src if dst is None else dst, f"{where}: dst", _ops.ACCESS_WRITE)
    axis = _normalize_dim(dim, s.rank, where)
    _check_same_tile(s, d, where)
    return _ops.make_call(
        "tl.cumsum",
        s,
        d,
        tirx.IntImm("int32", axis),
        tirx.IntImm("int32", int(_builtins.bool(reverse))),
    )


def _atomic(kind: str) -> Callable[..., Any]:
    def atomic(dst: Any, value: Any) -> Any:
        where = f"T.atomic_{kind}(dst, value)"
        if _is_tile_operand(value):
            v = _tile_of(value, f"{where}: value", _ops.ACCESS_READ)
            d_op = _operand(dst, f"{where}: dst", _ops.ACCESS_READ_WRITE)
            d = (
                _anchor(d_op, v.extents, _ops.ACCESS_READ_WRITE, where)
                if isinstance(d_op, _Element)
                else d_op
            )
            _check_same_tile(v, d, where)
            return _ops.make_call(f"tl.atomic_{kind}", d, v)
        d_op = _operand(dst, f"{where}: dst", _ops.ACCESS_READ_WRITE)
        if not isinstance(d_op, _Element):
            raise KernelTypeError(
                f"{where}: a scalar value updates one element: expected dst to be an "
                f"element access A[i, j], got the tile {d_op.buffer.name}{_fmt(d_op.extents)}"
            )
        d = _region_of(dst, where, _ops.ACCESS_READ_WRITE)
        return _ops.make_call(f"tl.atomic_{kind}", d, _as_value(value, d.dtype))

    atomic.__name__ = f"atomic_{kind}"
    atomic.__doc__ = (
        f"Atomic {kind} of ``value`` into ``dst``: an element ``A[i, j]`` with a scalar "
        "value, or a tile with a tile value of the same extents (elementwise)."
    )
    return atomic


def _is_tile_operand(value: Any) -> bool:
    return _ops.is_buffer(value) or isinstance(value, tvm.ir.TensorRegion)


atomic_add = _atomic("add")
atomic_max = _atomic("max")
atomic_min = _atomic("min")

# ---------------------------------------------------------------- scalars and misc


def clamp(value: Any, lo: Any, hi: Any) -> Any:
    """``min(max(value, lo), hi)``."""
    return _tvm_T.min(_tvm_T.max(value, lo), hi)


def cast(value: Any, dtype: Any) -> Any:
    """``value`` converted to ``dtype``."""
    return tirx.Cast(_normalize_dtype(dtype), value)


def print(value: Any, msg: str = "") -> Any:
    """Print ``value`` (a scalar expression or a tile) prefixed by ``msg`` when the kernel
    runs (on the CPU, to stdout)."""
    if not isinstance(msg, str):
        raise KernelTypeError(f"T.print(value, msg): expected msg to be a str, got {msg!r}")
    operand: Any
    if _is_tile_operand(value):
        operand = _tile_of(value, "T.print(value)", _ops.ACCESS_READ)
    else:
        if isinstance(value, _scalar_wrapper):
            value = value.scalar
        if not tvm.ir.is_prim_expr(value):
            raise KernelTypeError(
                f"T.print(value): expected an expression or a tile, got {_describe_operand(value)}"
            )
        operand = value
    return _ops.make_call("tl.print", operand, tvm.ir.StringImm(msg))


def annotate_layout(layout_map: dict[Any, Any]) -> None:
    """Hint the layout of tiles: ``{buffer: layout}`` where ``layout`` is a function
    from indices to indices (or a ``tirx.IndexMap``). Recorded in the function attribute
    ``tl.layout_map``; targets without layouts ignore it."""
    if not isinstance(layout_map, dict):
        raise KernelTypeError(
            f"T.annotate_layout: expected a dict {{buffer: layout}}, got {layout_map!r}"
        )
    state = _current_state()
    if state is None:
        raise ScopeError("T.annotate_layout is only allowed inside a @T.prim_func body")
    for buffer, layout in layout_map.items():
        if not _ops.is_buffer(buffer):
            raise KernelTypeError(f"T.annotate_layout: expected buffer keys, got {buffer!r}")
        if callable(layout) and not isinstance(layout, tirx.IndexMap):
            layout = tirx.IndexMap.from_func(layout, ndim=len(buffer.ty.shape))
        elif not isinstance(layout, tirx.IndexMap):
            raise KernelTypeError(
                f"T.annotate_layout: expected a layout function or tirx.IndexMap, got {layout!r}"
            )
        state.layout_map[str(buffer.name)] = layout


def use_swizzle(panel_size: int, order: str = "row", enable: bool = True) -> None:
    """Hint a swizzled (panel-major) block order with panels of ``panel_size`` blocks.
    Recorded in the function attribute ``tl.swizzle_panel``; a no-op where unused."""
    if isinstance(panel_size, _builtins.bool) or not isinstance(panel_size, int) or panel_size <= 0:
        raise KernelTypeError(
            f"T.use_swizzle(panel_size): expected a positive int, got {panel_size!r}"
        )
    if order not in ("row", "column"):
        raise KernelTypeError(f"T.use_swizzle(order): expected 'row' or 'column', got {order!r}")
    state = _current_state()
    if state is None:
        raise ScopeError("T.use_swizzle is only allowed inside a @T.prim_func body")
    if enable:
        state.swizzle_panel = panel_size


_DTYPE_PREFIXES = ("float", "bfloat", "int", "uint", "bool")


def __getattr__(name: str) -> Any:
    if name.startswith(_DTYPE_PREFIXES):
        raise UnknownDtypeError(
            f"T.{name}: dtype {name!r} does not exist; expected one of {', '.join(_DTYPE_NAMES)}"
        )
    raise AttributeError(f"the kernel language (T) has no name {name!r}")


__all__ = [  # noqa: RUF022 - grouped as in LANGUAGE.md
    "prim_func",
    "Tensor",
    "Buffer",
    "symbolic",
    "dynamic",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "bool",
    "Kernel",
    "get_thread_binding",
    "get_block_binding",
    "alloc_shared",
    "alloc_fragment",
    "alloc_local",
    "alloc_var",
    "serial",
    "grid",
    "Parallel",
    "Pipelined",
    "unroll",
    "vectorized",
    "copy",
    "fill",
    "clear",
    "gemm",
    "reduce",
    "reduce_sum",
    "reduce_max",
    "reduce_min",
    "reduce_abssum",
    "reduce_absmax",
    "cumsum",
    "atomic_add",
    "atomic_max",
    "atomic_min",
    "exp",
    "exp2",
    "log",
    "log2",
    "sqrt",
    "rsqrt",
    "abs",
    "tanh",
    "sigmoid",
    "sin",
    "cos",
    "pow",
    "floor",
    "ceil",
    "round",
    "max",
    "min",
    "clamp",
    "if_then_else",
    "cast",
    "infinity",
    "ceildiv",
    "floordiv",
    "floormod",
    "print",
    "annotate_layout",
    "use_swizzle",
    "KernelSyntaxError",
    "KernelTypeError",
    "ShapeMismatchError",
    "ScopeError",
    "UnsupportedError",
]
