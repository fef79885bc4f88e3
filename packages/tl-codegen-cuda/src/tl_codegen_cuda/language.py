"""Tier 2 names of the kernel language on 'cuda' (see `tl_passes.gpu_language`)."""

from __future__ import annotations

from tl_passes.gpu_language import (
    DEFAULT_WARP_SIZE,
    GemmWarpPolicy,
    alloc_barrier,
    async_copy,
    get_lane_idx,
    get_warp_idx,
    shfl_down,
    shfl_sync,
    shfl_up,
    shfl_xor,
    sync_threads,
    warp_reduce_max,
    warp_reduce_min,
    warp_reduce_sum,
)

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
