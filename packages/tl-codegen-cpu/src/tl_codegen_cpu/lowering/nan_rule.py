"""The GPU's NaN rule for float max/min, as TIR the CPU compilers vectorize.

CUDA's ``fmaxf``/``fminf`` (what ``T.max``, ``T.min`` and TileLang's max/min
reductions compile to on GPUs) return the operand that is not NaN, and NaN only when
both are. `cpu-max-min-ignore-nan` and the tile reduction emitters write that rule
with the helpers here.
"""

from __future__ import annotations

from typing import Any

from tvm import tirx

__all__ = ["is_float", "is_nan", "max_min_ignoring_nan"]


def is_float(dtype: str) -> bool:
    """Whether ``dtype`` (a scalar or vector dtype string) is a floating-point type."""
    return dtype.startswith(("float", "bfloat"))


def is_nan(value: Any) -> Any:
    """``isnan(value)``; a bfloat16 value is tested as float32 (TVM has no bfloat16
    ``isnan``; the widening is exact). Not ``x != x``, which TVM's simplifier folds."""
    dtype = str(value.ty.dtype)
    if dtype.startswith("bfloat16"):
        lanes = dtype[len("bfloat16") :]
        value = tirx.Cast("float32" + lanes, value)
    return tirx.isnan(value)


def max_min_ignoring_nan(a: Any, b: Any, larger: bool) -> Any:
    """``fmax(a, b)`` (``larger``) or ``fmin(a, b)`` of two float expressions that may
    both be NaN: ``isnan(b) || a > b ? a : b``. Each operand is evaluated more than once
    in the expression: bind anything costly first."""
    better = a > b if larger else a < b
    return tirx.Select(tirx.Or(is_nan(b), better), a, b)
