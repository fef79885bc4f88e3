"""``T.Kernel`` and the block/thread index bindings of the enclosing launch."""

from __future__ import annotations

import builtins as _builtins
import contextlib
from typing import Any

import tvm
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as _IB

from tl_ir import ops as _ops
from tl_ir.errors import KernelTypeError, ScopeError, UnsupportedError
from tl_ir.frontend import current_state as _current_state
from tl_ir.language._operands import describe_operand

__all__ = [
    "Kernel",
    "active_kernel",
    "get_block_binding",
    "get_block_bindings",
    "get_block_extent",
    "get_block_extents",
    "get_thread_binding",
    "get_thread_bindings",
    "get_thread_extent",
    "get_thread_extents",
]

_BLOCK_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
_THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
_THREAD_NAMES = ("tx", "ty", "tz")


def _extent(value: Any, where: str) -> Any:
    value = _ops.exact_int(value)
    if isinstance(value, _builtins.bool) or not (
        isinstance(value, int)
        or (tvm.ir.is_prim_expr(value) and str(value.ty.dtype).startswith(("int", "uint")))
    ):
        raise KernelTypeError(
            f"{where}: expected an int or an integer expression, got {describe_operand(value)}"
        )
    const = _ops.const_int(value)
    if const is not None and const <= 0:
        raise KernelTypeError(f"{where}: expected a positive extent, got {const}")
    return value


class Kernel:
    """``with T.Kernel(gx, gy=..., gz=..., threads=n or (x, y, z)) as (bx, by):``

    Launches a grid of 1-3 dims with ``threads`` threads per block (default 128) and
    binds the block indices (one Var for one grid dim, else a tuple). No grid extent
    (``T.Kernel(threads=32)``, ``T.Kernel()``), as in TileLang, launches one block: the IR
    holds a ``blockIdx.x`` of extent 1 and ``as`` binds an empty tuple. Several
    ``T.Kernel`` blocks in one ``@T.prim_func`` are consecutive launches: each runs
    to completion before the next starts (see `tl_ir.launch.kernel_launches`).

    Raises:
        KernelTypeError: more than 3 grid extents, or non-integer extents.
        ScopeError: used outside ``@T.prim_func``.
        UnsupportedError: a ``T.Kernel`` nested in another.
    """

    def __init__(self, *grid: Any, threads: Any = 128, prelude: Any = None) -> None:
        if len(grid) > 3:
            raise KernelTypeError(f"T.Kernel(*grid): expected 0 to 3 grid extents, got {len(grid)}")
        # No grid extent is one block (TileLang's `T.Kernel(threads=n)`); `as` binds ().
        self._bind_blocks = bool(grid)
        if not grid:
            grid = (1,)
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
        if state.kernel_depth:
            raise UnsupportedError(
                "T.Kernel inside another T.Kernel is not supported; kernels of one "
                "@T.prim_func run one after the other"
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
        state.block_extents = self.grid
        state.thread_extents = self.threads
        if not self._bind_blocks:
            return ()
        if len(block_vars) == 1 and not state.kernel_tuple_target:
            return block_vars[0]
        return tuple(block_vars)

    def __exit__(self, *exc: Any) -> bool | None:
        state = _current_state()
        if state is not None:
            state.kernel_depth -= 1
        return self._stack.__exit__(*exc)


def active_kernel(where: str) -> Any:
    state = _current_state()
    if state is None or not state.kernel_depth:
        raise ScopeError(f"{where} is only allowed inside `with T.Kernel(...)`")
    return state


def get_thread_binding(dim: int = 0) -> Any:
    """The thread index Var of dim ``dim`` (0 = x) of the enclosing ``T.Kernel``."""
    state = active_kernel("T.get_thread_binding")
    dim = _ops.exact_int(dim)
    if isinstance(dim, bool) or not isinstance(dim, int) or not 0 <= dim < len(state.thread_vars):
        raise KernelTypeError(
            f"T.get_thread_binding(dim): the kernel binds {len(state.thread_vars)} thread "
            f"dim(s), got dim={dim!r}"
        )
    return state.thread_vars[dim]


def get_block_binding(dim: int = 0) -> Any:
    """The block index Var of dim ``dim`` (0 = x) of the enclosing ``T.Kernel``."""
    state = active_kernel("T.get_block_binding")
    dim = _ops.exact_int(dim)
    if isinstance(dim, bool) or not isinstance(dim, int) or not 0 <= dim < len(state.block_vars):
        raise KernelTypeError(
            f"T.get_block_binding(dim): the kernel binds {len(state.block_vars)} block "
            f"dim(s), got dim={dim!r}"
        )
    return state.block_vars[dim]


def get_thread_bindings() -> list[Any]:
    """The thread index Vars of the enclosing ``T.Kernel`` (x first)."""
    return list(active_kernel("T.get_thread_bindings").thread_vars)


def get_block_bindings() -> list[Any]:
    """The block index Vars of the enclosing ``T.Kernel`` (x first)."""
    return list(active_kernel("T.get_block_bindings").block_vars)


def get_thread_extent(dim: int = 0) -> Any:
    """The thread-block extent of dim ``dim`` of the enclosing ``T.Kernel``."""
    extents = active_kernel("T.get_thread_extent").thread_extents
    if not 0 <= dim < len(extents):
        raise KernelTypeError(
            f"T.get_thread_extent(dim): the kernel has {len(extents)} thread dim(s), got {dim}"
        )
    return extents[dim]


def get_thread_extents() -> list[Any]:
    """The thread-block extents of the enclosing ``T.Kernel`` (x first)."""
    return list(active_kernel("T.get_thread_extents").thread_extents)


def get_block_extent(dim: int = 0) -> Any:
    """The grid extent of dim ``dim`` of the enclosing ``T.Kernel``."""
    extents = active_kernel("T.get_block_extent").block_extents
    if not 0 <= dim < len(extents):
        raise KernelTypeError(
            f"T.get_block_extent(dim): the kernel has {len(extents)} grid dim(s), got {dim}"
        )
    return extents[dim]


def get_block_extents() -> list[Any]:
    """The grid extents of the enclosing ``T.Kernel`` (x first)."""
    return list(active_kernel("T.get_block_extents").block_extents)
