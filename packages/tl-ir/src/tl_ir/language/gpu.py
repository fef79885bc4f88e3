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
Metal; barriers: all). The CPU targets run them too: warp shuffles
(``shfl_*``, ``warp_reduce_*``) as exchanges through block memory between
barriers (docs/cpu.md, "Warp shuffles"), a block barrier (``sync_threads``)
as a split of the thread loops, lane/warp indices as arithmetic and
``async_copy`` as a ``T.copy``.

Lane and warp indices follow ``threadIdx.x`` (1-D thread blocks; a kernel
with ``threads=(x, y)`` must compute its own).
"""

from __future__ import annotations

from typing import Any

import tvm
from tvm import tirx

from tl_ir import ops as _ops
from tl_ir.barriers import make_named_barrier
from tl_ir.errors import KernelTypeError, KernelValueError, UnsupportedError
from tl_ir.language._compat import unsupported_stub

# T.GemmWarpPolicy (how T.gemm spreads a tile over warps) is a GPU hint: listed here,
# defined once beside T.gemm's other hint checks (accepted on every target).
from tl_ir.language._hints import GemmWarpPolicy
from tl_ir.language._launch import get_thread_binding
from tl_ir.language._tile_ops import copy

#: Threads per warp assumed when ``width`` is not given (NVIDIA warps).
DEFAULT_WARP_SIZE = 32
#: Every lane of a 32-lane warp: the only shuffle mask the targets honour alike.
_FULL_MASK = (1 << 32) - 1


def _check_width(name: str, width: int, parameter: str = "width") -> int:
    width = _ops.exact_int(width)
    if isinstance(width, bool) or not isinstance(width, int) or width < 1 or width & (width - 1):
        raise KernelValueError(f"{name}: {parameter} must be a power of two >= 1, got {width!r}")
    return width


def _check_full_mask(name: str, mask: Any) -> Any:
    # HIP and Metal shuffles have no lane mask (the whole group takes part), so a
    # partial mask cannot mean the same on every target: only the full one is taken.
    if _ops.const_int(mask) != _FULL_MASK:
        raise UnsupportedError(
            f"T.{name}(mask=...): only the full-warp mask 0xFFFFFFFF is supported "
            f"(every lane of the group takes part), got {mask!r}"
        )
    return tirx.const(_FULL_MASK, "uint32")


def _dtype(value: Any) -> str:
    return str(value.ty.dtype)


def sync_threads(barrier_id: Any = None, arrive_count: Any = None) -> Any:
    """A block barrier (a statement): ``T.sync_threads()`` waits for every thread of
    the block (``__syncthreads()``); ``T.sync_threads(barrier_id, arrive_count)`` is a
    named barrier (`tl_ir.barriers`): the ``arrive_count`` threads that reach barrier
    ``barrier_id`` (1..15) wait for each other (``bar.sync id, count`` on CUDA).

    Raises:
        KernelTypeError: only one of the two given, one is not a constant int,
            ``barrier_id`` outside 1..15 or ``arrive_count`` below 1.
    """
    if barrier_id is None and arrive_count is None:
        return tirx.call_intrin("int32", "tirx.tvm_storage_sync", tvm.ir.StringImm("shared"))
    if barrier_id is None or arrive_count is None:
        raise KernelTypeError(
            f"T.sync_threads({barrier_id!r}, {arrive_count!r}): a named barrier takes both "
            "barrier_id and arrive_count (T.sync_threads() synchronizes the whole block)"
        )
    return make_named_barrier(barrier_id, arrive_count)


def get_lane_idx(warp_size: int = DEFAULT_WARP_SIZE) -> Any:
    """The thread's lane in its warp: ``threadIdx.x % warp_size`` (TileLang's parameter
    name; 32 unless given, on every target)."""
    warp_size = _check_width("get_lane_idx", warp_size, "warp_size")
    return get_thread_binding(0) % warp_size


def get_warp_idx(warp_size: int = DEFAULT_WARP_SIZE) -> Any:
    """The thread's warp in its block: ``threadIdx.x // warp_size`` (32 unless given)."""
    warp_size = _check_width("get_warp_idx", warp_size, "warp_size")
    return get_thread_binding(0) // warp_size


def shfl_sync(
    value: Any, src_lane: Any, width: int = DEFAULT_WARP_SIZE, mask: Any = _FULL_MASK
) -> Any:
    """``value`` as held by lane ``src_lane`` of the thread's ``width``-lane group.

    Raises:
        UnsupportedError: ``mask`` is not the full-warp mask (as for every shuffle).
    """
    width = _check_width("shfl_sync", width)
    mask = _check_full_mask("shfl_sync", mask)
    return tirx.call_intrin(
        _dtype(value), "tirx.tvm_warp_shuffle", mask, value, src_lane, width, width
    )


def shfl_xor(
    value: Any, lane_mask: Any, width: int = DEFAULT_WARP_SIZE, mask: Any = _FULL_MASK
) -> Any:
    """``value`` as held by lane ``lane ^ lane_mask`` (butterfly exchange)."""
    _check_full_mask("shfl_xor", mask)
    lane = get_lane_idx(_check_width("shfl_xor", width))
    return shfl_sync(value, tirx.bitwise_xor(lane, lane_mask), width)


def shfl_down(
    value: Any, delta: Any, width: int = DEFAULT_WARP_SIZE, mask: Any = _FULL_MASK
) -> Any:
    """``value`` as held by lane ``lane + delta`` (own value past the group's end)."""
    width = _check_width("shfl_down", width)
    mask = _check_full_mask("shfl_down", mask)
    return tirx.call_intrin(
        _dtype(value), "tirx.tvm_warp_shuffle_down", mask, value, delta, width, width
    )


def shfl_up(value: Any, delta: Any, width: int = DEFAULT_WARP_SIZE, mask: Any = _FULL_MASK) -> Any:
    """``value`` as held by lane ``lane - delta`` (own value before the group's start)."""
    width = _check_width("shfl_up", width)
    mask = _check_full_mask("shfl_up", mask)
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


def async_copy(
    src: Any,
    dst: Any,
    *,
    coalesced_width: int | None = None,
    annotations: dict[str, Any] | None = None,
    loop_layout: Any = None,
) -> None:
    """Copy a tile as ``T.copy`` does. The copy completes before the next statement
    (a valid schedule of an asynchronous copy followed by its wait); ``cp.async``
    pipelines come with the ``async_copy`` feature's lowering. The keyword hints are
    TileLang's, checked as ``T.copy`` checks them."""
    copy(
        src, dst, coalesced_width=coalesced_width, annotations=annotations, loop_layout=loop_layout
    )


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
