"""The GPU language: the Tier 2 names of the kernel language (docs/gpu.md, "Tier 2 names").

``__all__`` here is the one list of them. `tl_ir.language` (and so
``import tl_jit.language as T``) exports every one as ``T.<name>``, and the GPU
backends' ``language`` modules (``tl_codegen_cuda.language``,
``tl_codegen_hip.language``) re-export this list::

    import tl_jit.language as T

    S[tx] = T.warp_reduce_sum(A[tx])   # inside a T.Kernel with threads=128

Plain functions called inside a ``@T.prim_func`` body; each returns the TIR
the GPU lowering and TVM's codegens understand, so they work on every GPU
target whose codegen has the underlying instruction (shuffles: CUDA, ROCm,
Metal; barriers: all). Warp shuffles (``shfl_*``, ``warp_reduce_*``) have no
faithful meaning on the CPU targets (their pipeline rejects them); a block
barrier (``sync_threads``) and lane/warp indices work there too.

Lane and warp indices follow ``threadIdx.x`` (1-D thread blocks; a kernel
with ``threads=(x, y)`` must compute its own).
"""

from __future__ import annotations

from typing import Any

import tvm
from tvm import tirx

from tl_ir.language._compat import unsupported_stub

# T.GemmWarpPolicy (how T.gemm spreads a tile over warps) is a GPU hint: listed here,
# defined once beside T.gemm's other hint checks (accepted on every target).
from tl_ir.language._hints import GemmWarpPolicy
from tl_ir.language._launch import get_thread_binding
from tl_ir.language._tile_ops import copy

#: Threads per warp assumed when ``width`` is not given (NVIDIA warps).
DEFAULT_WARP_SIZE = 32
_FULL_MASK = (1 << 32) - 1


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
    return get_thread_binding(0) % _check_width("get_lane_idx", width)


def get_warp_idx(width: int = DEFAULT_WARP_SIZE) -> Any:
    """The thread's warp in its block: ``threadIdx.x // width``."""
    return get_thread_binding(0) // _check_width("get_warp_idx", width)


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
    copy(src, dst)


#: ``T.alloc_barrier``: memory barriers (``mbarrier``) are not lowered on any target yet;
#: calling it raises `UnsupportedError` (a ``NotImplementedError``) with the reason
#: docs/language.md's compatibility table gives.
alloc_barrier = unsupported_stub("alloc_barrier")

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
