"""The registered names of TVM's builtin ops, resolved once against the installed TVM.

Passes recognise builtin calls (``if_then_else``, ``exp``, ``call_extern``...) by their
op's name. TVM 0.27 registers most of them under ``tirx.`` but a few under ``prim.``
(``prim.if_then_else``, ``prim.likely``, ``prim.ceil``...), and some former builtins are
no calls at all any more (bitwise operators and shifts are expression nodes). A name
spelt by hand in a pass that the installed TVM does not register never matches, and the
check it guards silently never fires. So passes name builtins by their short name
through `builtin_op_name` / `builtin_op_names`, which return the registered full name
and raise at import time for a name TVM does not know.
"""

from __future__ import annotations

import functools

import tvm

#: The namespaces TVM registers TIR builtins under, in lookup order.
BUILTIN_NAMESPACES = ("tirx", "prim")


@functools.cache
def _registered() -> frozenset[str]:
    return frozenset(str(name) for name in tvm.ir.Op.list_op_names())


def builtin_op_name(short_name: str) -> str:
    """The registered full name of the TVM builtin ``short_name`` (``"if_then_else"`` ->
    ``"prim.if_then_else"``).

    ``short_name`` may also be a full name already (``"tirx.exp"``), which must be
    registered as it is.

    Raises:
        LookupError: neither ``tirx.<short_name>`` nor ``prim.<short_name>`` is a
            registered op (a misspelt name, or a builtin this TVM does not have).
    """
    registered = _registered()
    if short_name in registered:
        return short_name
    for namespace in BUILTIN_NAMESPACES:
        full = f"{namespace}.{short_name}"
        if full in registered:
            return full
    tried = ", ".join(f"{namespace}.{short_name}" for namespace in BUILTIN_NAMESPACES)
    raise LookupError(
        f"short_name: expected a TVM builtin op registered as one of {tried}; "
        f"got {short_name!r}, which this TVM ({tvm.__version__}) does not register"
    )


def builtin_op_names(*short_names: str) -> frozenset[str]:
    """The registered full names of ``short_names`` (see `builtin_op_name`).

    Raises:
        LookupError: one of them is not a registered builtin.
    """
    return frozenset(builtin_op_name(name) for name in short_names)


def is_builtin_op(op: object) -> bool:
    """Whether ``op`` is an `tvm.ir.Op` registered in one of `BUILTIN_NAMESPACES` (not a
    ``tl.*`` tile op, not a call of a function)."""
    if not isinstance(op, tvm.ir.Op):
        return False
    return str(op.name).split(".", 1)[0] in BUILTIN_NAMESPACES
