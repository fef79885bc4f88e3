"""The pass registry: pass names mapped to lazy factories (nothing imported before use)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from tl_passes.pass_base import Pass


def _lazy(module: str, class_name: str) -> Callable[[], type[Pass]]:
    def load() -> type[Pass]:
        cls = getattr(importlib.import_module(module), class_name)
        if not (isinstance(cls, type) and issubclass(cls, Pass)):
            raise TypeError(f"{module}.{class_name} is not a tl_passes.Pass subclass")
        return cls

    return load


#: Pass name -> factory returning the pass class. A test checks every key equals
#: the class's ``name``.
PASS_REGISTRY: Mapping[str, Callable[[], type[Pass]]] = MappingProxyType(
    {
        "simplify": _lazy("tl_passes.simplify", "SimplifyPass"),
        "remove-no-op": _lazy("tl_passes.remove_no_op", "RemoveNoOpPass"),
        "mark-parallel-loops": _lazy("tl_passes.mark_parallel_loops", "MarkParallelLoopsPass"),
        "stack-block-locals": _lazy("tl_passes.stack_block_locals", "StackBlockLocalsPass"),
        "gpu-infer-layouts": _lazy("tl_passes.gpu_layout", "GpuInferLayoutsPass"),
        "gpu-insert-barriers": _lazy("tl_passes.gpu_insert_barriers", "GpuInsertBarriersPass"),
        "gpu-lower-tile-ops": _lazy("tl_passes.gpu_lower_tile_ops", "GpuLowerTileOpsPass"),
        "gpu-plan-shared-memory": _lazy("tl_passes.gpu_shared_memory", "GpuPlanSharedMemoryPass"),
        "lower-pipelined-loops": _lazy(
            "tl_passes.lower_pipelined_loops", "LowerPipelinedLoopsPass"
        ),
        "lower-alloc-var": _lazy("tl_passes.lower_alloc_var", "LowerAllocVarPass"),
        "legalize-half-precision": _lazy(
            "tl_passes.legalize_half_precision", "LegalizeHalfPrecisionPass"
        ),
        "cpu-reject-gpu-ops": _lazy("tl_passes.cpu_reject_gpu_ops", "CpuRejectGpuOpsPass"),
        "cpu-lower-launch": _lazy("tl_passes.cpu_lower_launch", "CpuLowerLaunchPass"),
        "cpu-lower-tile-ops": _lazy("tl_passes.cpu_lower_tile_ops", "CpuLowerTileOpsPass"),
        "cpu-lower-parallel-loops": _lazy(
            "tl_passes.cpu_lower_parallel_loops", "CpuLowerParallelLoopsPass"
        ),
        "cpu-localize-tiles": _lazy("tl_passes.cpu_localize_tiles", "CpuLocalizeTilesPass"),
        "cpu-legalize-intrinsics": _lazy(
            "tl_passes.cpu_legalize_intrinsics", "CpuLegalizeIntrinsicsPass"
        ),
        "cpu-forward-copies": _lazy("tl_passes.cpu_forward_copies", "CpuForwardCopiesPass"),
        "cpu-vectorize-exp": _lazy("tl_passes.cpu_vectorize_exp", "CpuVectorizeExpPass"),
        "cpu-split-vector-loops": _lazy(
            "tl_passes.cpu_split_vector_loops", "CpuSplitVectorLoopsPass"
        ),
    }
)


def available_passes() -> tuple[str, ...]:
    """Return the registered pass names, sorted."""
    return tuple(sorted(PASS_REGISTRY))


def get_pass_class(name: str) -> type[Pass]:
    """Return the pass class registered under ``name``.

    Raises:
        KeyError: if no pass has that name (the message lists the known names).
    """
    try:
        factory = PASS_REGISTRY[name]
    except KeyError:
        raise KeyError(
            f"unknown pass name {name!r}; registered passes: {', '.join(available_passes())}"
        ) from None
    return factory()


def create_pass(name: str, **options: Any) -> Pass:
    """Instantiate the pass registered under ``name`` with ``options`` as its fields.

    Raises:
        KeyError: for an unknown name.
        TypeError: for an option the pass does not have.
    """
    cls = get_pass_class(name)
    try:
        return cls(**options)
    except TypeError as error:
        raise TypeError(f"pass {name!r}: bad options {sorted(options)}: {error}") from None
