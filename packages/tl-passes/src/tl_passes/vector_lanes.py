"""Taking a vector expression apart lane by lane, for backends whose code generator
cannot print some vector values (a hand-written ``T.Ramp`` store on a CPU target, a
lane count CUDA has no type for).

`lane_of` returns the scalar expression of one lane; a node it cannot split raises
`LaneSplitError`, which each backend turns into its own refusal naming what to write
instead.
"""

from __future__ import annotations

from typing import Any

import tvm
from tvm import tirx

__all__ = ["BINARY_OPERATIONS", "LaneSplitError", "expression_lanes", "lane_of"]

#: Every two-operand TIR expression node: arithmetic, comparisons, logic, shifts and
#: bitwise operations (each built as ``type(node)(a, b)``).
BINARY_OPERATIONS: tuple[Any, ...] = (
    tirx.Add,
    tirx.Sub,
    tirx.Mul,
    tirx.Div,
    tirx.Mod,
    tirx.FloorDiv,
    tirx.FloorMod,
    tirx.Min,
    tirx.Max,
    tirx.EQ,
    tirx.NE,
    tirx.LT,
    tirx.LE,
    tirx.GT,
    tirx.GE,
    tirx.And,
    tirx.Or,
    tirx.LShift,
    tirx.RShift,
    tirx.BitwiseAnd,
    tirx.BitwiseOr,
    tirx.BitwiseXor,
)


class LaneSplitError(ValueError):
    """`lane_of` met a vector node it cannot take apart; ``node`` is that node."""

    def __init__(self, node: Any) -> None:
        super().__init__(f"cannot split the vector {type(node).__name__} {node} into lanes")
        self.node = node


def _dtype(expr: Any) -> str | None:
    dtype = getattr(expr, "dtype", None)
    return None if dtype is None else str(dtype)


def expression_lanes(expr: Any) -> int:
    """The lane count of ``expr``'s dtype (1 for a scalar or a node without a dtype)."""
    dtype = _dtype(expr)
    if dtype is None:
        return 1
    return int(tvm.DataType(dtype).lanes)


def _scalar(expr: Any) -> str:
    return str(tvm.DataType(str(expr.dtype)).with_lanes(1))


def lane_of(expr: Any, lane: Any) -> Any:
    """Lane ``lane`` (an int32 scalar expression) of the vector expression ``expr``: a
    scalar is the same in every lane, a ramp gives ``base + stride * lane``, a load
    loads at its indices' lane, and loads, casts, operations, selects and intrinsic
    calls whose arguments are scalars or vectors of the same lanes are split operand
    by operand. Raises `LaneSplitError` for any other vector node (a shuffle, a call
    mixing lane counts)."""
    if expression_lanes(expr) == 1:
        return expr
    if isinstance(expr, tirx.Ramp):
        return expr.base + expr.stride * tirx.Cast(str(expr.base.dtype), lane)
    if isinstance(expr, tirx.Broadcast):
        return expr.value
    if isinstance(expr, tvm.ir.TensorLoad):
        indices = [lane_of(i, lane) for i in expr.indices]
        return tirx.BufferLoad(expr.source, indices, span=expr.span)  # its source line
    if isinstance(expr, tirx.Cast):
        return tirx.Cast(_scalar(expr), lane_of(expr.value, lane))
    if isinstance(expr, BINARY_OPERATIONS):
        return type(expr)(lane_of(expr.a, lane), lane_of(expr.b, lane))
    if isinstance(expr, (tirx.Not, tirx.BitwiseNot)):
        return type(expr)(lane_of(expr.a, lane))
    if isinstance(expr, tirx.Select):
        return tirx.Select(
            lane_of(expr.condition, lane),
            lane_of(expr.true_value, lane),
            lane_of(expr.false_value, lane),
        )
    lanes = expression_lanes(expr)
    is_op_call = isinstance(expr, tvm.ir.Call) and isinstance(expr.op, tvm.ir.Op)
    if is_op_call and all(expression_lanes(a) in (1, lanes) for a in expr.args):
        args = [lane_of(a, lane) for a in expr.args]
        return tirx.call_intrin(_scalar(expr), str(expr.op.name), *args)
    raise LaneSplitError(expr)
