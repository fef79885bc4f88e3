"""Reading constants and buffers out of TVM values: what the language's checks and the
tile-op descriptions (`tl_ir.ops`, which re-exports these) need of a value."""

from __future__ import annotations

import numbers
import operator
from typing import Any

import tvm
from tvm import tirx

__all__ = ["const_int", "data_buffer", "exact_int", "is_buffer", "viewed_buffer"]


def is_buffer(value: Any) -> bool:
    """Whether ``value`` is a TVM buffer (a ``Var`` whose type is a ``BufferType``)."""
    return isinstance(value, tvm.ir.Var) and isinstance(getattr(value, "ty", None), tirx.BufferType)


def exact_int(value: Any) -> Any:
    """``value`` as a Python ``int`` when it is an exact integer other than a bool (a
    numpy integer, anything registered as ``numbers.Integral``); anything else as it came.

    The language's integer checks take what this returns, so ``np.int64(256)`` is
    accepted wherever ``256`` is, and reaches TVM as the same ``int32`` constant.
    """
    if type(value) is int or isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return value
    return operator.index(value)


def data_buffer(data: Any) -> Any:
    """The buffer ``data`` is the memory of (``B.data``, a ``tirx.buffer_data`` call), or
    None for any other expression."""
    if (
        isinstance(data, tvm.ir.Call)
        and str(getattr(data.op, "name", "")) == "tirx.buffer_data"
        and len(data.args) == 1
        and is_buffer(data.args[0])
    ):
        return data.args[0]
    return None


def viewed_buffer(decl: Any) -> Any:
    """The buffer whose memory the ``DeclBuffer`` ``decl`` views (``T.view``,
    ``T.reshape``, ``T.Tensor(shape, dtype, B.data)``), or None when it declares other
    memory."""
    return data_buffer(decl.data)


def const_int(value: Any) -> int | None:
    """The Python int of a constant (``int``, a numpy integer, ``IntImm``); None for
    anything else."""
    if isinstance(value, bool):
        return int(value)
    value = exact_int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, tirx.IntImm):
        return int(value.value)
    return None
