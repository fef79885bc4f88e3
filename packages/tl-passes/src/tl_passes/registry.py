"""Pass registries: pass names mapped to lazy factories (nothing imported before use).

`PASS_REGISTRY` holds tl_passes' own passes; a backend package builds its own
`PassRegistry` for the passes it owns (the CPU backend: ``tl_codegen_cpu.passes``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

from tl_passes.pass_base import Pass

#: A factory returning a pass class (importing its module on first use).
PassFactory = Callable[[], type[Pass]]


def lazy_pass_class(module: str, class_name: str) -> PassFactory:
    """Return a factory that imports ``module`` and returns its `Pass` subclass ``class_name``.

    The factory raises TypeError when the attribute is not a `Pass` subclass.
    """

    def load() -> type[Pass]:
        cls = getattr(importlib.import_module(module), class_name)
        if not (isinstance(cls, type) and issubclass(cls, Pass)):
            raise TypeError(f"{module}.{class_name} is not a tl_passes.Pass subclass")
        return cls

    return load


class PassRegistry(Mapping[str, PassFactory]):
    """A read-only mapping of pass name -> lazy factory, with lookup and construction.

    Args:
        factories: pass name -> factory; every key must equal its class's
            ``name`` (each owning package's tests check it).
    """

    def __init__(self, factories: Mapping[str, PassFactory]) -> None:
        self._factories: Mapping[str, PassFactory] = MappingProxyType(dict(factories))

    def __getitem__(self, name: str) -> PassFactory:
        return self._factories[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._factories)

    def __len__(self) -> int:
        return len(self._factories)

    def names(self) -> tuple[str, ...]:
        """Return the registered pass names, sorted."""
        return tuple(sorted(self._factories))

    def get_class(self, name: str) -> type[Pass]:
        """Return the pass class registered under ``name``.

        Raises:
            KeyError: if no pass has that name (the message lists the known names).
        """
        try:
            factory = self._factories[name]
        except KeyError:
            raise KeyError(
                f"unknown pass name {name!r}; registered passes: {', '.join(self.names())}"
            ) from None
        return factory()

    def create(self, name: str, **options: Any) -> Pass:
        """Instantiate the pass registered under ``name`` with ``options`` as its fields.

        Raises:
            KeyError: for an unknown name.
            TypeError: for an option the pass does not have.
        """
        cls = self.get_class(name)
        try:
            return cls(**options)
        except TypeError as error:
            raise TypeError(f"pass {name!r}: bad options {sorted(options)}: {error}") from None


_lazy = lazy_pass_class

#: tl_passes' own passes. A test checks every key equals the class's ``name``.
PASS_REGISTRY = PassRegistry(
    {
        "simplify": _lazy("tl_passes.simplify", "SimplifyPass"),
        "remove-no-op": _lazy("tl_passes.remove_no_op", "RemoveNoOpPass"),
        "wrapping-casts": _lazy("tl_passes.wrapping_casts", "WrappingCastsPass"),
        "int32-minimum-comparisons": _lazy(
            "tl_passes.minimum_comparisons", "Int32MinimumComparisonsPass"
        ),
        "fold-constant-math": _lazy("tl_passes.fold_constant_math", "FoldConstantMathPass"),
        "gpu-infer-layouts": _lazy("tl_passes.gpu.layout", "GpuInferLayoutsPass"),
        "gpu-insert-barriers": _lazy("tl_passes.gpu.barriers", "GpuInsertBarriersPass"),
        "gpu-lower-tile-ops": _lazy("tl_passes.gpu.lower_tile_ops", "GpuLowerTileOpsPass"),
        "gpu-plan-shared-memory": _lazy("tl_passes.gpu.shared_memory", "GpuPlanSharedMemoryPass"),
        "gpu-pipeline-loops": _lazy("tl_passes.gpu.pipelined_ring", "GpuPipelineLoopsPass"),
        "gpu-choose-shared-layouts": _lazy("tl_passes.gpu.swizzle", "GpuChooseSharedLayoutsPass"),
        "gpu-swizzle-shared": _lazy("tl_passes.gpu.swizzle", "GpuSwizzleSharedPass"),
        "gpu-finish-async-copies": _lazy("tl_passes.gpu.async_copy", "GpuFinishAsyncCopiesPass"),
        "gpu-matrix-load-addresses": _lazy(
            "tl_passes.gpu.matrix_load_addresses", "GpuMatrixLoadAddressesPass"
        ),
        "gpu-shared-conditions": _lazy(
            "tl_passes.gpu.shared_conditions", "GpuSharedConditionsPass"
        ),
        "gpu-wrap-narrow-integers": _lazy(
            "tl_passes.gpu.narrow_integers", "GpuWrapNarrowIntegersPass"
        ),
        "lower-pipelined-loops": _lazy(
            "tl_passes.lower_pipelined_loops", "LowerPipelinedLoopsPass"
        ),
        "lower-alloc-var": _lazy("tl_passes.lower_alloc_var", "LowerAllocVarPass"),
    }
)


def available_passes() -> tuple[str, ...]:
    """Return the names in `PASS_REGISTRY`, sorted."""
    return PASS_REGISTRY.names()


def get_pass_class(name: str) -> type[Pass]:
    """Return the class registered under ``name`` in `PASS_REGISTRY` (see `PassRegistry.get_class`)."""
    return PASS_REGISTRY.get_class(name)


def create_pass(name: str, **options: Any) -> Pass:
    """Instantiate the pass ``name`` of `PASS_REGISTRY` (see `PassRegistry.create`)."""
    return PASS_REGISTRY.create(name, **options)
