"""Classic-style TileLang kernels used by the test suites of every layer.

Each module follows the convention of README.md in this directory; `ALL_KERNELS`
lists them by name for parametrized suites.
"""

from __future__ import annotations

import importlib
from types import ModuleType

KERNEL_MODULES: tuple[str, ...] = (
    "gemm",
    "gemm_transposed",
    "elementwise_add",
    "softmax",
    "rms_norm",
    "column_reduce",
    "symbolic_scale",
    "two_outputs",
    "atomic_sum",
    "serial_scan",
    "tile_cumsum",
)


def load(name: str) -> ModuleType:
    """Import the kernel module ``name`` (one of `KERNEL_MODULES`)."""
    if name not in KERNEL_MODULES:
        raise KeyError(f"unknown kernel module {name!r}; expected one of {KERNEL_MODULES}")
    return importlib.import_module(f"{__name__}.{name}")


def all_kernels() -> dict[str, ModuleType]:
    """Every kernel module, by name."""
    return {name: load(name) for name in KERNEL_MODULES}


ALL_KERNELS = KERNEL_MODULES
