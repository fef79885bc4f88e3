"""``T.pow``, ``T.isnan``, ``T.isinf`` and ``T.isfinite`` on ``bfloat16`` operands.

TVM's builders refuse these when the kernel is parsed: its ``pow`` checks that the
operands are a float type, which in this TVM excludes bfloat16 ("power only applies to
float"; a bfloat16 with a float32 operand works, through a conversion), and its
classification functions name bfloat16 "not supported for finiteness ops" (for float16
they classify the operand converted to float32). Here:

- ``T.pow(x, y)`` of two bfloat16 operands is the ``pow`` call of result bfloat16,
  as TVM builds it for float16 (targets compute it in float32, rounded once);
- ``T.isnan``/``T.isinf``/``T.isfinite`` of a bfloat16 operand classify it converted
  to float32 (exact: the same class), as TVM does for float16.

Every other operand goes to TVM's function unchanged.
"""

from __future__ import annotations

from typing import Any

from tvm import tirx
from tvm.script import tirx as _tvm_T

__all__ = ["isfinite", "isinf", "isnan", "pow"]

_BFLOAT16 = "bfloat16"


def _value(operand: Any) -> Any:
    """The expression of a ``T.alloc_var`` read (TVMScript's scalar wrapper), else
    ``operand``."""
    return operand.scalar if isinstance(operand, _tvm_T.scalar_wrapper) else operand


def _bfloat16_dtype(operand: Any) -> str | None:
    """The dtype of a bfloat16 (scalar or vector) expression, else None."""
    dtype = getattr(getattr(operand, "ty", None), "dtype", None)
    if dtype is None:
        return None
    text = str(dtype)
    return text if text == _BFLOAT16 or text.startswith(_BFLOAT16 + "x") else None


def _widened(operand: Any) -> Any:
    """``operand`` converted to float32 (as many lanes) when it is bfloat16, else as is."""
    value = _value(operand)
    dtype = _bfloat16_dtype(value)
    if dtype is None:
        return operand
    return tirx.Cast("float32" + dtype[len(_BFLOAT16) :], value)


def pow(x: Any, y: Any, span: Any = None) -> Any:
    """``x ** y`` (TVM's ``T.pow``), also for two bfloat16 operands."""
    a, b = _value(x), _value(y)
    dtype = _bfloat16_dtype(a)
    if dtype is not None and _bfloat16_dtype(b) == dtype:
        return tirx.call_intrin(dtype, "tirx.pow", a, b)
    return _tvm_T.pow(x, y, span)


def isnan(x: Any, span: Any = None) -> Any:
    """Whether ``x`` is NaN (TVM's ``T.isnan``), also for a bfloat16 ``x``."""
    return _tvm_T.isnan(_widened(x), span)


def isinf(x: Any, span: Any = None) -> Any:
    """Whether ``x`` is infinite (TVM's ``T.isinf``), also for a bfloat16 ``x``."""
    return _tvm_T.isinf(_widened(x), span)


def isfinite(x: Any, span: Any = None) -> Any:
    """Whether ``x`` is finite (TVM's ``T.isfinite``), also for a bfloat16 ``x``."""
    return _tvm_T.isfinite(_widened(x), span)
