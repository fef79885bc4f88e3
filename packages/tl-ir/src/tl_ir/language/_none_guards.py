"""TVM's expression builders re-exported by the language, refusing ``None`` operands.

``T.if_then_else(None, a, b)``, ``T.Select``, ``T.Ramp``, ``T.Broadcast``,
``T.BufferLoad(A, [None])`` and ``T.launch_thread(None, n)`` handed ``None`` to TVM's
C++ constructors, which crashed the process (a segfault while the kernel was parsed).
The wrapped builders raise `KernelTypeError` naming the call and the operand instead.
"""

from __future__ import annotations

import functools
from typing import Any

from tl_ir.errors import KernelTypeError

__all__ = ["refusing_none"]


def _holds_none(value: Any) -> bool:
    if value is None:
        return True
    return isinstance(value, list | tuple) and any(item is None for item in value)


def _check(name: str, args: tuple[Any, ...]) -> None:
    for position, arg in enumerate(args):
        if _holds_none(arg):
            raise KernelTypeError(
                f"T.{name}: operand {position} is None (or holds None), expected a "
                "kernel value or expression"
            )


class _GuardedClass(type):
    """A stand-in for an expression class: calling it checks the operands and builds
    the TVM node; ``isinstance``/``issubclass`` answer for the TVM class."""

    _wrapped: type
    _label: str

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        _check(cls._label, args)
        return cls._wrapped(*args, **kwargs)

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, cls._wrapped)

    def __subclasscheck__(cls, subclass: type) -> bool:
        return issubclass(subclass, cls._wrapped)


def refusing_none(builder: Any, name: str) -> Any:
    """``builder`` (a function or an expression class) raising `KernelTypeError` when a
    positional operand is ``None`` or a list or tuple holding ``None``; otherwise it
    builds what ``builder`` builds (a class stays usable with ``isinstance``)."""
    if isinstance(builder, type):
        namespace = {"_wrapped": builder, "_label": name, "__doc__": builder.__doc__}
        return _GuardedClass(builder.__name__, (), namespace)

    @functools.wraps(builder)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        _check(name, args)
        return builder(*args, **kwargs)

    return guarded
