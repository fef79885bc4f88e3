"""A Python int beside an unsigned operand of ``&``, ``|``, ``^`` takes that operand's type.

``A[i] & 0xFFFFFFFF`` on a ``uint32`` element (TileLang's ``test_tilelang_intimm``) met
TVM's operator, which made the literal a signed 32-bit constant first: ``-1``, then
refused it for the unsigned operand ("cannot make uint from negative value"). In a
kernel parsed by `tl_ir.prim_func`, an integer literal outside ``int32`` that fits the
other operand's integer type becomes a constant of that type, as a C compiler reads
``a & 0xFFFFFFFFu``. Arithmetic keeps TVM's rules (a literal past ``int32`` makes the
sum ``int64``, as in TileLang); every other parse keeps TVM's behaviour.
"""

from __future__ import annotations

from typing import Any

import tvm
from tvm import tirx
from tvm.script.parser.core import dispatch, doc
from tvm.script.parser.core.evaluator import DEFAULT_OP

from tl_ir.frontend import current_state

__all__ = ["install"]

_INT32 = (-(1 << 31), (1 << 31) - 1)
_OPERATORS = (doc.BitAnd, doc.BitOr, doc.BitXor)


def _typed_literal(literal: Any, other: Any) -> Any:
    """``literal`` as a constant of ``other``'s integer type when it is a Python int
    outside ``int32`` that fits that type; else ``literal`` unchanged."""
    if isinstance(literal, bool) or not isinstance(literal, int):
        return literal
    if _INT32[0] <= literal <= _INT32[1] or not tvm.ir.is_prim_expr(other):
        return literal
    dtype = tvm.DataType(str(other.ty.dtype))
    if int(dtype.lanes) != 1 or str(dtype).rstrip("0123456789") not in ("int", "uint"):
        return literal
    bits = int(dtype.bits)
    low, high = (
        (0, (1 << bits) - 1)
        if str(dtype).startswith("u")
        else (
            -(1 << (bits - 1)),
            (1 << (bits - 1)) - 1,
        )
    )
    return tirx.IntImm(str(dtype), literal) if low <= literal <= high else literal


def install() -> None:
    """Register the typed-literal handling for ``&``, ``|``, ``^`` (once per process)."""
    for operator in _OPERATORS:
        for index in (0, 1):
            previous = dispatch.get_op(tirx.Expr, operator, index, default=None)
            if getattr(previous, "_tl_typed_literal", False):
                continue
            fallback = previous if previous is not None else DEFAULT_OP[operator]

            def evaluate(a: Any, b: Any, _fallback: Any = fallback) -> Any:
                if current_state() is not None:
                    a, b = _typed_literal(a, b), _typed_literal(b, a)
                return _fallback(a, b)

            evaluate._tl_typed_literal = True  # type: ignore[attr-defined]
            dispatch.register_op(tirx.Expr, operator, index)(evaluate)
