"""``import tl_jit.language as T``: the kernel language of `tl_ir.language`, loaded on first use.

Every name resolves to `tl_ir.language`'s (so ``T.prim_func is
tl_ir.language.prim_func``), and the GPU-only names that language lacks (warp
shuffles and reductions, ``sync_threads``...) to `tl_backend_api.gpu_language`'s.
The import itself is free: tvm loads only when a name is first used, which keeps
a cache hit of a ``@jit`` kernel from importing the compiler at all.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


def _language() -> ModuleType:
    return importlib.import_module("tl_ir.language")


def _gpu_language() -> ModuleType:
    return importlib.import_module("tl_backend_api.gpu_language")


def __getattr__(name: str) -> Any:
    # Dunder names are Python's; TileLang's fast math (``T.__exp``) are ours.
    if name.startswith("__") and name.endswith("__") and name != "__all__":
        raise AttributeError(name)
    module = _language()
    if name == "__all__":
        names = list(getattr(module, "__all__", [n for n in dir(module) if not n.startswith("_")]))
        return names + [n for n in _gpu_language().__all__ if n not in names]
    try:
        value = getattr(module, name)
    except AttributeError:
        # GPU-only names (warp shuffles, warp reductions...) of the GPU-style backends.
        value = getattr(_gpu_language(), name, None)
        if value is None:
            raise AttributeError(f"module 'tl_jit.language' has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(dir(_language())) | set(_gpu_language().__all__) | set(globals()))
