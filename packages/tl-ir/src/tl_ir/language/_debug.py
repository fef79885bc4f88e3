"""``T.device_assert``: a condition every thread that reaches it checks when the kernel runs."""

from __future__ import annotations

import builtins as _builtins
from typing import Any

import tvm
from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as _IB

from tl_ir import ops as _ops
from tl_ir.device_asserts import make_device_assert
from tl_ir.errors import KernelTypeError, ScopeError
from tl_ir.frontend import current_state as _current_state
from tl_ir.language._operands import describe_operand, scalar_wrapper

__all__ = ["device_assert"]


def device_assert(condition: Any, msg: str = "", no_stack_info: bool = False) -> None:
    """Check ``condition`` (a boolean or integer scalar expression) when the kernel runs,
    on every thread that reaches the statement (TileLang's meaning).

    A failing check makes the kernel call raise ``AssertionError`` naming the kernel,
    ``msg`` and the line of the assertion on the CPU targets and in the reference
    interpreter (the kernel runs to its end first: the first failure is reported); on
    CUDA it prints the message and traps (a device-side assert). ``no_stack_info=True``
    (TileLang's switch for leaving the location out of the message) is accepted; the
    location is always reported here. A condition that is a Python bool is checked
    while the kernel is built: ``False`` is a `KernelTypeError`, ``True`` adds nothing.

    Raises:
        KernelTypeError: ``msg`` is not a str, ``no_stack_info`` not a bool, the
            condition is not a scalar expression, or is the constant ``False``.
        ScopeError: used outside a ``@T.prim_func`` body.
    """
    where = "T.device_assert(condition, msg)"
    if not isinstance(msg, str):
        raise KernelTypeError(f"{where}: expected msg to be a str, got {msg!r}")
    if not isinstance(no_stack_info, _builtins.bool):
        raise KernelTypeError(
            f"{where}: expected no_stack_info to be a bool, got {no_stack_info!r}"
        )
    if isinstance(condition, scalar_wrapper):
        condition = condition.scalar
    condition = _ops.exact_int(condition)
    if isinstance(condition, _builtins.bool | int):
        if not condition:
            raise KernelTypeError(
                f"{where}: the condition is the constant {condition!r}, so the assertion "
                f"always fails{': ' + msg if msg else ''}"
            )
        return None
    if not tvm.ir.is_prim_expr(condition) or "x" in str(condition.ty.dtype):
        raise KernelTypeError(
            f"{where}: expected the condition to be a scalar expression, got "
            f"{describe_operand(condition)}"
        )
    dtype = str(condition.ty.dtype)
    if dtype != "bool":
        if not ("int" in dtype or "float" in dtype):
            raise KernelTypeError(
                f"{where}: expected a boolean or numeric condition, got one of dtype {dtype}"
            )
        condition = tirx.NE(condition, tirx.const(0, dtype))
    state = _current_state()
    if state is None or not IRBuilder.is_in_scope():
        raise ScopeError("T.device_assert is only allowed inside a @T.prim_func body")
    state.device_asserts = True
    _IB.evaluate(make_device_assert(condition, msg))
    return None
