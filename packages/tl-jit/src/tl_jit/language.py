"""``import tl_jit.language as T``: the kernel language of `tl_ir.language`, loaded on first use.

Every name resolves to `tl_ir.language`'s (so ``T.prim_func is
tl_ir.language.prim_func``), the GPU language (`tl_ir.language.gpu`: warp
shuffles and reductions, ``sync_threads``...) included. The import itself is
free: tvm loads only when a name is first used, which keeps a cache hit of a
``@jit`` kernel from importing the compiler at all.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from tl_jit.tvm_names import install_on_import

# ``tvm.tirx.PrimExpr`` in a helper's annotation resolves before any ``T.`` name is used.
install_on_import()


def _language() -> ModuleType:
    return importlib.import_module("tl_ir.language")


def __getattr__(name: str) -> Any:
    # Dunder names are Python's; TileLang's fast math (``T.__exp``) are ours.
    if name.startswith("__") and name.endswith("__") and name != "__all__":
        raise AttributeError(name)
    module = _language()
    if name == "__all__":
        return list(module.__all__)
    try:
        value = getattr(module, name)
    except AttributeError:
        raise AttributeError(f"module 'tl_jit.language' has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    # tl_ir.language's own dunders (``__path__``...) are not this module's (see __getattr__).
    names = {n for n in dir(_language()) if not (n.startswith("__") and n.endswith("__"))}
    return sorted(names | set(globals()))
