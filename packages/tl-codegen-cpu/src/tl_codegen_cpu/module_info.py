"""What the CPU code generators need to know about a module: its PrimFuncs' global symbols."""

from __future__ import annotations

import tvm
from tvm import tirx


def function_names(mod: tvm.IRModule) -> tuple[str, ...]:
    """Every PrimFunc's global symbol (else its name in the module), in module order."""
    names = []
    for global_var, func in mod.functions.items():
        if isinstance(func, tirx.PrimFunc):
            symbol = func.attrs.get("global_symbol") if func.attrs is not None else None
            names.append(str(symbol) if symbol is not None else str(global_var.name_hint))
    return tuple(names)


def check_module(mod: object, caller: str) -> tuple[str, ...]:
    """Return `function_names` of ``mod``.

    Raises:
        TypeError: ``mod`` is not an IRModule (named with ``caller``).
        ValueError: it holds no PrimFunc.
    """
    if not isinstance(mod, tvm.IRModule):
        raise TypeError(f"{caller} mod: expected a tvm.IRModule, got {type(mod).__name__}")
    names = function_names(mod)
    if not names:
        raise ValueError(f"{caller} mod: expected at least one PrimFunc, the module has none")
    return names
