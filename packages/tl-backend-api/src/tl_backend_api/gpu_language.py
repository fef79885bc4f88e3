"""Tier 2 names of the kernel language for GPU targets (docs/gpu.md, "Tier 2 names").

Language, not a pass: it lives below the codegens so every GPU backend's
``language`` module can re-export it.

Plain functions called inside a ``@T.prim_func`` body; each returns the TIR
the GPU lowering and TVM's codegens understand, so they work on every GPU
target whose codegen has the underlying instruction (shuffles: CUDA, ROCm,
Metal; barriers: all). tl-codegen-cuda and tl-codegen-hip re-export them
from their ``language`` modules::

    from tl_codegen_cuda.language import shfl_xor, sync_threads, warp_reduce_sum

Lane and warp indices follow ``threadIdx.x`` (1-D thread blocks; a kernel
with ``threads=(x, y)`` must compute its own). On the CPU targets these
names have no faithful meaning (the CPU pipeline rejects them).
"""

from __future__ import annotations

from enum import Enum
from typing import Any

import tvm
from tvm import tirx

#: Threads per warp assumed when ``width`` is not given (NVIDIA warps).
DEFAULT_WARP_SIZE = 32
_FULL_MASK = (1 << 32) - 1


def _thread_x() -> Any:
    import tl_ir.language as T

    return T.get_thread_binding(0)


def _check_width(name: str, width: int) -> int:
    if isinstance(width, bool) or not isinstance(width, int) or width < 1 or width & (width - 1):
        raise ValueError(f"{name}: width must be a power of two >= 1, got {width!r}")
    return width


def _dtype(value: Any) -> str:
    return str(value.ty.dtype)


def sync_threads() -> Any:
    """``__syncthreads()``: a barrier for every thread of the block (a statement)."""
    return tirx.call_intrin("int32", "tirx.tvm_storage_sync", tvm.ir.StringImm("shared"))


def get_lane_idx(width: int = DEFAULT_WARP_SIZE) -> Any:
    """The thread's lane in its warp: ``threadIdx.x % width``."""
    return _thread_x() % _check_width("get_lane_idx", width)


def get_warp_idx(width: int = DEFAULT_WARP_SIZE) -> Any:
    """The thread's warp in its block: ``threadIdx.x // width``."""
    return _thread_x() // _check_width("get_warp_idx", width)


def shfl_sync(value: Any, src_lane: Any, width: int = DEFAULT_WARP_SIZE) -> Any:
    """``value`` as held by lane ``src_lane`` of the thread's ``width``-lane group."""
    width = _check_width("shfl_sync", width)
    mask = tirx.const(_FULL_MASK, "uint32")
    return tirx.call_intrin(
        _dtype(value), "tirx.tvm_warp_shuffle", mask, value, src_lane, width, width
    )


def shfl_xor(value: Any, lane_mask: Any, width: int = DEFAULT_WARP_SIZE) -> Any:
    """``value`` as held by lane ``lane ^ lane_mask`` (butterfly exchange)."""
    lane = get_lane_idx(_check_width("shfl_xor", width))
    return shfl_sync(value, tirx.bitwise_xor(lane, lane_mask), width)


def shfl_down(value: Any, delta: Any, width: int = DEFAULT_WARP_SIZE) -> Any:
    """``value`` as held by lane ``lane + delta`` (own value past the group's end)."""
    width = _check_width("shfl_down", width)
    mask = tirx.const(_FULL_MASK, "uint32")
    return tirx.call_intrin(
        _dtype(value), "tirx.tvm_warp_shuffle_down", mask, value, delta, width, width
    )


def shfl_up(value: Any, delta: Any, width: int = DEFAULT_WARP_SIZE) -> Any:
    """``value`` as held by lane ``lane - delta`` (own value before the group's start)."""
    width = _check_width("shfl_up", width)
    mask = tirx.const(_FULL_MASK, "uint32")
    return tirx.call_intrin(
        _dtype(value), "tirx.tvm_warp_shuffle_up", mask, value, delta, width, width
    )


def _warp_reduce(name: str, value: Any, width: int, combine: Any) -> Any:
    width = _check_width(name, width)
    offset = width // 2
    while offset >= 1:
        value = combine(value, shfl_xor(value, offset, width))
        offset //= 2
    return value


def warp_reduce_sum(value: Any, width: int = DEFAULT_WARP_SIZE) -> Any:
    """The sum of ``value`` over the ``width`` lanes of the group, on every lane."""
    return _warp_reduce("warp_reduce_sum", value, width, lambda a, b: a + b)


def warp_reduce_max(value: Any, width: int = DEFAULT_WARP_SIZE) -> Any:
    """The maximum of ``value`` over the group's lanes, on every lane."""
    return _warp_reduce("warp_reduce_max", value, width, tirx.max)


def warp_reduce_min(value: Any, width: int = DEFAULT_WARP_SIZE) -> Any:
    """The minimum of ``value`` over the group's lanes, on every lane."""
    return _warp_reduce("warp_reduce_min", value, width, tirx.min)


def async_copy(src: Any, dst: Any) -> None:
    """Copy a tile as ``T.copy`` does. The copy completes before the next statement
    (a valid schedule of an asynchronous copy followed by its wait); ``cp.async``
    pipelines come with the ``async_copy`` feature's lowering."""
    import tl_ir.language as T

    T.copy(src, dst)


def alloc_barrier(arrive_count: int) -> Any:
    """Not implemented: memory barriers (``mbarrier``) need the TMA/wgmma lowering.

    Raises:
        NotImplementedError: always, naming what is missing.
    """
    raise NotImplementedError(
        f"alloc_barrier({arrive_count!r}): mbarrier objects are not lowered yet on any "
        "GPU target; use sync_threads() for block-wide synchronization"
    )


class GemmWarpPolicy(Enum):
    """How ``T.gemm`` spreads a tile over warps. Accepted for compatibility; the
    per-thread FMA GEMM uses the accumulator's fragment layout whatever the policy."""

    Square = 0
    FullRow = 1
    FullCol = 2


__all__ = [
    "DEFAULT_WARP_SIZE",
    "GemmWarpPolicy",
    "alloc_barrier",
    "async_copy",
    "get_lane_idx",
    "get_warp_idx",
    "shfl_down",
    "shfl_sync",
    "shfl_up",
    "shfl_xor",
    "sync_threads",
    "warp_reduce_max",
    "warp_reduce_min",
    "warp_reduce_sum",
]
