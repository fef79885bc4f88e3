"""Import-system helpers for finders that act around one module's import.

A ``sys.meta_path`` finder placed first sees each import before the others. The finders
here (tl_runtime.interrupts, tl_jit.tvm_names) do not find modules themselves: they ask
the finders after them for the spec, and wrap that spec's loader so they run code around
the module's execution, once.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

__all__ = ["spec_from_other_finders", "wrap_execution"]


def spec_from_other_finders(
    skip: object, fullname: str, path: Any, target: Any = None
) -> ModuleSpec | None:
    """The spec the finders of ``sys.meta_path`` other than ``skip`` give ``fullname``
    (the first that gives one), or None when none does."""
    for finder in sys.meta_path:
        if finder is skip or not hasattr(finder, "find_spec"):
            continue
        spec = finder.find_spec(fullname, path, target)
        if spec is not None:
            return spec
    return None


def wrap_execution(
    spec: ModuleSpec, around: Callable[[Callable[[ModuleType], None], ModuleType], None]
) -> bool:
    """Make ``spec``'s loader execute its module as ``around(execute, module)`` (where
    ``execute(module)`` is the loader's own step), for the next execution only: a loader
    object may serve other modules later (a zip importer).

    Returns:
        False where the loader has no ``exec_module`` or takes no attributes (the module
        then runs unwrapped).
    """
    loader: Any = spec.loader
    execute = getattr(loader, "exec_module", None)
    if execute is None:
        return False

    def exec_module(module: ModuleType) -> None:
        with contextlib.suppress(AttributeError):
            del loader.exec_module
        around(execute, module)

    try:
        loader.exec_module = exec_module
    except (AttributeError, TypeError):
        return False
    return True
