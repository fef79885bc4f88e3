"""TVM's expression builders re-exported by the language, refusing operands they
cannot take with a `KernelTypeError` that names the call, the operand and what came.

* ``None``: ``T.if_then_else(None, a, b)``, ``T.Select``, ``T.Ramp``, ``T.Broadcast``,
  ``T.BufferLoad(A, [None])`` and ``T.launch_thread(None, n)`` handed it to TVM's C++
  constructors, which crashed the process (a segfault while the kernel was parsed);
  ``T.evaluate(None)``, ``T.assume``, ``T.call_extern``... met TVM's internal checks.
* Not a scalar (a tile, a string, a list...), in the math functions (``T.exp``,
  ``T.max``...): TVM answered with its FFI signature text.
* An integer or bool operand of a float function (``T.exp(n)``): TVM built an integer
  ``exp`` no code generator resolves (an internal error when the kernel was built).
* A condition of ``T.if_then_else``/``T.Select`` that is not a bool: TVM's internal
  check; TileLang's functions take a bool too (``a if n else b`` takes a number as
  ``if`` does, `tl_ir.python_if`).
* ``T.Ramp``/``T.Broadcast`` lanes below 2 (TVM's internal check).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import tvm

from tl_ir.errors import KernelTypeError
from tl_ir.language._operands import describe_operand, scalar_operand_problem

#: Functions of floats only: an integer operand built a call no code generator resolves.
FLOAT_FUNCTIONS = (
    "exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin",
    "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh",
    "atanh", "erf", "sigmoid", "atan2", "hypot", "copysign", "fmod", "nextafter",
)  # fmt: skip
#: Functions TVM's C++ checks (``value.defined()``) answered about ``None``.
NONE_REFUSING_FUNCTIONS = (
    "evaluate", "assume", "address_of", "tvm_access_ptr", "call_extern",
    "call_pure_extern", "call_intrin", "thread_binding",
)  # fmt: skip
#: Functions of scalars of any dtype.
SCALAR_FUNCTIONS = (
    "max", "min", "abs", "fabs", "floor", "ceil", "trunc", "nearbyint", "popcount",
    "fma", "floordiv", "floormod", "truncdiv", "truncmod", "shift_left", "shift_right",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "likely",
)  # fmt: skip

__all__ = [
    "FLOAT_FUNCTIONS",
    "NONE_REFUSING_FUNCTIONS",
    "SCALAR_FUNCTIONS",
    "bool_condition",
    "expression_statement",
    "lanes_at",
    "refusing_none",
    "scalar_math",
]

#: A further check of a guarded builder's operands: raises or returns nothing.
Check = Callable[[tuple[Any, ...], dict[str, Any]], None]


def _holds_none(value: Any) -> bool:
    if value is None:
        return True
    return isinstance(value, list | tuple) and any(item is None for item in value)


def _check(name: str, args: tuple[Any, ...], kwargs: dict[str, Any], extra: Check | None) -> None:
    for position, arg in enumerate(args):
        if _holds_none(arg):
            raise KernelTypeError(
                f"T.{name}: operand {position} is None (or holds None), expected a "
                "kernel value or expression"
            )
    if extra is not None:
        extra(args, kwargs)


class _GuardedClass(type):
    """A stand-in for an expression class: calling it checks the operands and builds
    the TVM node; ``isinstance``/``issubclass`` answer for the TVM class."""

    _wrapped: type
    _label: str
    _extra: Check | None

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        _check(cls._label, args, kwargs, cls._extra)
        return cls._wrapped(*args, **kwargs)

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, cls._wrapped)

    def __subclasscheck__(cls, subclass: type) -> bool:
        return issubclass(subclass, cls._wrapped)


def refusing_none(builder: Any, name: str, extra: Check | None = None) -> Any:
    """``builder`` (a function or an expression class) raising `KernelTypeError` when a
    positional operand is ``None`` or a list or tuple holding ``None``, or when
    ``extra`` (`bool_condition`, `lanes_at`) refuses the operands; otherwise it builds
    what ``builder`` builds (a class stays usable with ``isinstance``)."""
    if isinstance(builder, type):
        namespace = {
            "_wrapped": builder,
            "_label": name,
            "_extra": staticmethod(extra) if extra is not None else None,
            "__doc__": builder.__doc__,
        }
        return _GuardedClass(builder.__name__, (), namespace)

    @functools.wraps(builder)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        _check(name, args, kwargs, extra)
        return builder(*args, **kwargs)

    return guarded


def _dtype(value: Any) -> str | None:
    return str(value.ty.dtype) if tvm.ir.is_prim_expr(value) else None


def bool_condition(name: str) -> Check:
    """A check that operand 0 (the condition of ``T.<name>``) is a bool: a Python
    bool or a bool expression."""

    def check(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if not args or isinstance(args[0], bool):
            return
        # `a == b` and `a != b` are Python objects that become the comparison on demand.
        condition = args[0].asobject() if hasattr(args[0], "asobject") else args[0]
        dtype = _dtype(condition)
        if dtype is None or not dtype.startswith("bool"):
            raise KernelTypeError(
                f"T.{name}(cond, ...): cond must be a bool, got "
                f"{describe_operand(args[0])}; compare a number to test it (x != 0)"
            )

    return check


def lanes_at(name: str, position: int) -> Check:
    """A check that a constant lane count (operand ``position`` or ``lanes=``) of
    ``T.<name>`` is at least 2 (TVM stopped with its internal check)."""

    def check(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        lanes = args[position] if len(args) > position else kwargs.get("lanes")
        if isinstance(lanes, int) and not isinstance(lanes, bool) and lanes < 2:
            raise KernelTypeError(f"T.{name}: lanes must be at least 2, got {lanes}")

    return check


def expression_statement(builder: Any) -> Any:
    """``T.evaluate`` refusing a value that is not an expression (``T.evaluate("x")``
    was a string statement no target emits: silently nothing)."""

    @functools.wraps(builder)
    def guarded(value: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(value, int | float | tvm.ir.Expr):
            raise KernelTypeError(
                f"T.evaluate(value): expected an expression (a call), got {describe_operand(value)}"
            )
        return builder(value, *args, **kwargs)

    return guarded


def scalar_math(builder: Any, name: str, *, floats_only: bool) -> Any:
    """``builder`` (``T.<name>``) refusing a positional operand that is not a scalar
    (`scalar_operand_problem`), and with ``floats_only`` an integer or bool one (a
    Python int included: ``T.exp(0.0)``, not ``T.exp(0)``)."""

    @functools.wraps(builder)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        for position, arg in enumerate(args):
            problem = scalar_operand_problem(arg)
            if problem is not None:
                raise KernelTypeError(
                    f"T.{name}: operand {position} must be a scalar value or expression, "
                    f"got {problem}"
                )
            dtype = _dtype(arg) or ("float" if isinstance(arg, float) else "int")
            if floats_only and not dtype.startswith(("float", "bfloat")):
                raise KernelTypeError(
                    f"T.{name}: operand {position} must be a float, got "
                    f"{describe_operand(arg)}; convert it first: "
                    f'T.{name}(T.cast(x, "float32"))'
                )
        return builder(*args, **kwargs)

    return guarded
