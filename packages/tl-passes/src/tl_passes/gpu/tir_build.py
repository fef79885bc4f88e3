"""Small TIR builders the GPU tile-op lowerings share (statements, guards, loops, casts)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from tvm import tirx

#: Loops with at most this many iterations per thread are unrolled.
UNROLL_LIMIT = 64


def int_imm(value: int) -> Any:
    """An int32 constant."""
    return tirx.IntImm("int32", value)


def seq(stmts: Sequence[Any]) -> Any:
    """One statement for ``stmts`` (nested sequences flattened; a no-op when empty)."""
    flat: list[Any] = []
    for stmt in stmts:
        if isinstance(stmt, tirx.SeqStmt):
            flat.extend(stmt.seq)
        else:
            flat.append(stmt)
    if not flat:
        return tirx.Evaluate(int_imm(0))
    return flat[0] if len(flat) == 1 else tirx.SeqStmt(flat)


def both(a: Any | None, b: Any | None) -> Any | None:
    """The conjunction of two optional conditions (None: no condition)."""
    if a is None:
        return b
    if b is None:
        return a
    return tirx.all(a, b)


def guard(stmt: Any, condition: Any | None) -> Any:
    """``stmt`` under ``if condition`` (as is when ``condition`` is None)."""
    return stmt if condition is None else tirx.IfThenElse(condition, stmt, None)


def for_loop(var: Any, extent: int, body: Any, unroll: bool = False) -> Any:
    """``for var in range(extent)``, unrolled when ``unroll``."""
    kind = tirx.ForKind.UNROLLED if unroll else tirx.ForKind.SERIAL
    return tirx.For(var, int_imm(0), int_imm(extent), kind, body)


def dtype_of(expr: Any) -> str:
    """The dtype of a TIR expression, as a string."""
    return str(expr.ty.dtype)


def cast(value: Any, dtype: str) -> Any:
    """``value`` as ``dtype`` (Python numbers become constants; no cast when it already is)."""
    if isinstance(value, (int, float)):
        return tirx.const(value, dtype)
    return value if dtype_of(value) == dtype else tirx.Cast(dtype, value)


def unflatten(flat: Any, extents: Sequence[int]) -> list[Any]:
    """Row-major index over ``extents`` of the flat position ``flat`` (< numel)."""
    index: list[Any] = []
    for d, extent in enumerate(extents):
        if extent == 1:
            index.append(int_imm(0))
            continue
        stride = math.prod(extents[d + 1 :])
        value = flat // stride if stride > 1 else flat
        index.append(value % extent if d > 0 else value)
    return index


def const_int(value: Any) -> int | None:
    """The int of a constant (Python int or IntImm), None when not constant."""
    if isinstance(value, int):
        return value
    if isinstance(value, tirx.IntImm):
        return int(value.value)
    return None
