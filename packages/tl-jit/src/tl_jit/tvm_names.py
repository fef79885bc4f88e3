"""``tvm.tirx.PrimExpr`` for TileLang helpers that name it at import time.

TileLang programs annotate helpers with ``tirx.PrimExpr`` (``def f(x:
tirx.PrimExpr)``), evaluated when their module is imported, before any ``T.``
name is used. This TVM has no such name; `tl_ir.language` adds it
(`tl_ir.language._tvm_compat`), but ``import tl_jit.language as T`` loads that
lazily to keep imports cheap. `install_on_import` bridges the gap without loading
anything: it gives ``tvm.tirx`` a module ``__getattr__`` (at once when tvm is
loaded, else when it is) that loads the language and answers with its names the
first time one of them is asked for.
"""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from tl_runtime.import_hooks import spec_from_other_finders, wrap_execution

#: The names `tl_ir.language._tvm_compat` adds to ``tvm.tirx``.
_COMPAT_NAMES = frozenset({"PrimExpr"})
_MODULE = "tvm.tirx"


def _add_lazy_names(tirx: ModuleType) -> None:
    previous = tirx.__dict__.get("__getattr__")
    if getattr(previous, "_tl_compat", False):
        return

    def lazy(name: str) -> Any:
        if name in _COMPAT_NAMES:
            # Hand the module back its own lookup first: installing asks hasattr().
            if previous is None:
                del tirx.__getattr__
            else:
                tirx.__getattr__ = previous  # type: ignore[method-assign]
            from tl_ir.language import _tvm_compat

            _tvm_compat.install()
            return getattr(tirx, name)
        if previous is not None:
            return previous(name)
        raise AttributeError(f"module {_MODULE!r} has no attribute {name!r}")

    lazy._tl_compat = True  # type: ignore[attr-defined]
    tirx.__getattr__ = lazy  # type: ignore[method-assign]


class _AfterTirxImport(importlib.abc.MetaPathFinder):
    """Finds ``tvm.tirx`` with the other finders and adds the names once it has run."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != _MODULE:
            return None
        spec = spec_from_other_finders(self, fullname, path, target)
        if spec is not None:
            wrap_execution(spec, _execute_then_add_names)
        return spec


def _execute_then_add_names(execute: Callable[[ModuleType], None], module: ModuleType) -> None:
    execute(module)
    _add_lazy_names(module)


def install_on_import() -> None:
    """Make ``tvm.tirx.PrimExpr`` resolvable whenever ``tvm.tirx`` is (or gets) loaded."""
    loaded = sys.modules.get(_MODULE)
    if loaded is not None:
        _add_lazy_names(loaded)
        return
    if not any(isinstance(f, _AfterTirxImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterTirxImport())
