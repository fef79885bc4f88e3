"""The starting value of a max/min reduction, shared by every target's lowering.

``T.reduce_max`` of a row is ``max_j x[i, j]``: for floats that is ``-inf`` when every
element is ``-inf`` (a fully masked attention row), and the identity must say so. The
lowest finite value (``-FLT_MAX``), which the targets used, returned ``-3.4e38`` for
such a row. Types without an infinity (integers, ``float8_e4m3fn``) start from their
lowest and highest values.
"""

from __future__ import annotations

from typing import Any

from tvm import tirx

__all__ = ["max_identity", "min_identity"]

#: Float types that have an infinity.
_WITH_INFINITY = frozenset({"float16", "bfloat16", "float32", "float64", "float8_e5m2"})


def max_identity(dtype: str) -> Any:
    """The identity of ``max`` over ``dtype``: ``-inf`` where the type has it, else its
    lowest value."""
    if dtype in _WITH_INFINITY:
        return tirx.const(float("-inf"), dtype)
    return tirx.min_value(dtype)


def min_identity(dtype: str) -> Any:
    """The identity of ``min`` over ``dtype``: ``+inf`` where the type has it, else its
    highest value."""
    if dtype in _WITH_INFINITY:
        return tirx.const(float("inf"), dtype)
    return tirx.max_value(dtype)
