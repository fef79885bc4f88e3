"""``import tl_jit.language as T``: the kernel language of `tl_ir.language`, loaded on first use.

Every name resolves to `tl_ir.language`'s (so ``T.prim_func is
tl_ir.language.prim_func``). The import itself is free: tvm loads only when a
name is first used, which keeps a cache hit of a ``@jit`` kernel from
importing the compiler at all.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


def _language() -> ModuleType:
    return importlib.import_module("tl_ir.language")


def __getattr__(name: str) -> Any:
    if name.startswith("__") and name not in ("__all__",):
        raise AttributeError(name)
    module = _language()
    if name == "__all__":
        return list(getattr(module, "__all__", [n for n in dir(module) if not n.startswith("_")]))
    try:
        value = getattr(module, name)
    except AttributeError:
        raise AttributeError(f"module 'tl_jit.language' has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(dir(_language())) | set(globals()))
