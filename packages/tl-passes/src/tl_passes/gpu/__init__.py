"""Lowering shared by the GPU-style backends, parameterized by each backend's `GpuTraits`.

A GPU backend declares a `GpuTraits` value in its own package and builds its
pipeline from `gpu_passes(traits)`; nothing here asks which target it is.

Modules: `traits` (the `GpuTraits` value), `layout` (fragment layouts,
`gpu-infer-layouts`), `barriers` (`gpu-insert-barriers`), `lower_tile_ops`
(`gpu-lower-tile-ops`, driving `kernel` and one module per tile op: `copy`,
`fill`, `gemm`, `reduce`, `cumsum`, `atomics`, `parallel`), `shared_memory`
(`gpu-plan-shared-memory`), `launches` (consecutive ``T.Kernel`` launches, each
lowered on its own).
"""

from __future__ import annotations

from tl_passes.gpu.barriers import GpuInsertBarriersPass, barrier, insert_barriers, is_barrier
from tl_passes.gpu.errors import GpuLoweringError
from tl_passes.gpu.launches import KERNEL_SHARED_ATTR, kernel_functions, map_kernels
from tl_passes.gpu.layout import (
    FragmentLayout,
    GpuInferLayoutsPass,
    LayoutError,
    infer_fragment_layouts,
)
from tl_passes.gpu.lower_tile_ops import GpuLowerTileOpsPass, lower_gpu_tile_ops
from tl_passes.gpu.matrix import FragmentMap, MatrixInstruction, MatrixLoad
from tl_passes.gpu.pipeline import gpu_passes
from tl_passes.gpu.shared_memory import (
    DYNAMIC_SHARED_ATTR,
    GpuPlanSharedMemoryPass,
    dynamic_shared_bytes,
    make_shared_static,
)
from tl_passes.gpu.traits import (
    ATOMIC_KINDS,
    DEFAULT_VECTOR_BYTES,
    PORTABLE_TRAITS,
    AsyncCopy,
    AtomicCall,
    GpuTraits,
    SharedMemoryModel,
    SwizzledOperands,
    WarpShuffle,
)

__all__ = [
    "ATOMIC_KINDS",
    "DEFAULT_VECTOR_BYTES",
    "DYNAMIC_SHARED_ATTR",
    "KERNEL_SHARED_ATTR",
    "PORTABLE_TRAITS",
    "AsyncCopy",
    "AtomicCall",
    "FragmentLayout",
    "FragmentMap",
    "GpuInferLayoutsPass",
    "GpuInsertBarriersPass",
    "GpuLowerTileOpsPass",
    "GpuLoweringError",
    "GpuPlanSharedMemoryPass",
    "GpuTraits",
    "LayoutError",
    "MatrixInstruction",
    "MatrixLoad",
    "SharedMemoryModel",
    "SwizzledOperands",
    "WarpShuffle",
    "barrier",
    "dynamic_shared_bytes",
    "gpu_passes",
    "infer_fragment_layouts",
    "insert_barriers",
    "is_barrier",
    "kernel_functions",
    "lower_gpu_tile_ops",
    "make_shared_static",
    "map_kernels",
]
