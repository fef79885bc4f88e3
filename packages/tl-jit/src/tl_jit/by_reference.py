"""Pickling a decorated kernel function by reference, as Python pickles a function.

A ``@jit`` (or ``@autotune``) function holds compiled kernels, locks and caches that
mean nothing in another process; what another process needs is the same definition.
So it pickles as its module and qualified name, and unpickling imports it there (and
``copy.copy``/``copy.deepcopy`` return the object itself), exactly as for a plain
function (a wrapper bound under another name, ``tuned = autotune(...)(add)``, is
found under that name). One that cannot be found is refused with the reason; ``copy``
returns the object itself either way.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

__all__ = ["CopiedAsItself", "reduce_by_reference"]


def reduce_by_reference(obj: object, func: Callable[..., Any], what: str) -> str:
    """``obj.__reduce__()`` for a decorated ``func``: its qualified name, which pickle
    resolves in ``func.__module__`` (the decorator copies ``__module__`` onto ``obj``).

    Raises:
        TypeError: ``func`` is not reachable as ``module.qualname``, or that name holds
            another object (defined in a function, in ``exec``, or rebound since).
    """
    module_name = getattr(func, "__module__", None)
    qualname = getattr(func, "__qualname__", "?")
    if "<locals>" in qualname:
        raise TypeError(
            f"{what} {qualname} cannot be pickled: it is defined inside a function; "
            "define it at module level so another process can import it"
        )
    module: Any = sys.modules.get(module_name) if isinstance(module_name, str) else None
    found: Any = module
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if found is obj:
        return qualname
    # A wrapper bound under another name (tuned = autotune(...)(add)): found by identity.
    for name, value in list(vars(module).items()) if module is not None else ():
        if value is obj:
            return str(name)
    raise TypeError(
        f"{what} {qualname} cannot be pickled: {module_name}.{qualname} is "
        f"{'not defined' if found is None else 'another object'}; pickling stores the "
        "name, so the function must be importable by it"
    )


class CopiedAsItself:
    """``copy.copy`` and ``copy.deepcopy`` return the object itself, as for a function
    (a decorated kernel function holds caches and locks, never copied)."""

    def __copy__(self) -> Any:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return self
