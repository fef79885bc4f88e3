"""``apply_simplify`` / ``simplify_prim_func``: TVM's arithmetic simplifier over a kernel.

TileLang programs call these on a builder's result to fold the index arithmetic of
their compile-time constants before compiling; the kernel's meaning is unchanged.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any


def apply_simplify(stmt: Any, inline_let: bool = False) -> Any:
    """The PrimFunc (or the single function of an IRModule) with its arithmetic simplified.

    Args:
        stmt: a ``tvm.tirx.PrimFunc`` or an ``IRModule`` holding exactly one function.
        inline_let: also substitute let-bound values into their uses first.

    Returns:
        the simplified ``PrimFunc``.

    Raises:
        TypeError: ``stmt`` is neither a PrimFunc nor an IRModule.
        ValueError: the IRModule does not hold exactly one function.
    """
    import tvm
    from tvm.tirx import PrimFunc

    if isinstance(stmt, PrimFunc):
        mod = tvm.IRModule.from_expr(stmt)
    elif isinstance(stmt, tvm.IRModule):
        mod = stmt
    else:
        raise TypeError(
            f"apply_simplify: stmt: expected a PrimFunc or an IRModule, got {type(stmt).__name__}"
        )
    if len(mod.functions) != 1:
        raise ValueError(
            f"apply_simplify: stmt: expected an IRModule with one function, "
            f"got {len(mod.functions)}"
        )
    passes = [tvm.tirx.transform.StmtSimplify()]
    if inline_let:
        passes.insert(0, tvm.tirx.transform.ConvertSSA())
    mod = tvm.transform.Sequential(passes)(mod)
    (func,) = mod.functions.values()
    return func


def simplify_prim_func(builder: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a kernel builder so the PrimFunc it returns goes through `apply_simplify`."""

    @functools.wraps(builder)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return apply_simplify(builder(*args, **kwargs))

    return wrapper
