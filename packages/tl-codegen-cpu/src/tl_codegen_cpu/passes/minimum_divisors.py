"""`cpu-minimum-divisors`: floor division by the most negative constant of its type.

TVM's lowering of ``//`` and ``%`` inside its LLVM code generator negates a negative
constant divisor, and the negation of the type's most negative value does not fit the
type: ``A[i] % T.int8(-128)`` failed to build on ``llvm`` with TVM's raw "Literal value
128 exceeds range of int8" (``c`` and the interpreter computed it). Every integer
``FloorDiv`` / ``FloorMod`` whose divisor is the constant ``MIN`` of its signed type
(``-2**(bits-1)``) is written out as what it computes, with selects and no division:

* ``a // MIN`` is ``-1`` for ``a > 0``, ``1`` for ``a == MIN``, ``0`` otherwise;
* ``a % MIN`` is ``a + MIN`` for ``a > 0`` (in range), ``0`` for ``a == MIN``, ``a``
  otherwise.

(``a == MIN`` is tested as ``a < MIN + 1``: TVM's simplifier folded the equality with
``INT32_MIN`` to false.)

Truncating division (``T.truncdiv``, ``T.truncmod``) builds as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_passes.pass_base import PassContext, PrimFuncPass

__all__ = ["CpuMinimumDivisorsPass", "lower_minimum_divisors"]


def _minimum_divisor(node: Any) -> bool:
    dtype = tvm.DataType(str(node.ty.dtype))
    if dtype.type_code != tvm.DataTypeCode.INT or int(dtype.lanes) != 1:
        return False
    divisor = node.b
    return isinstance(divisor, tirx.IntImm) and int(divisor.value) == -(1 << (dtype.bits - 1))


def _lowered(node: Any) -> Any:
    if not _minimum_divisor(node):
        return node
    dtype = str(node.ty.dtype)
    a, minimum = node.a, node.b
    zero, one = tirx.const(0, dtype), tirx.const(1, dtype)
    # a < MIN + 1, not a == MIN: TVM's simplifier folded a == INT32_MIN to false.
    positive = tirx.GT(a, zero)
    is_minimum = tirx.LT(a, tirx.const(int(minimum.value) + 1, dtype))
    if isinstance(node, tirx.FloorDiv):
        return tirx.Select(positive, -one, tirx.Select(is_minimum, one, zero))
    return tirx.Select(positive, tirx.Add(a, minimum), tirx.Select(is_minimum, zero, a))


def lower_minimum_divisors(stmt: tirx.Stmt) -> tirx.Stmt:
    """``stmt`` with every scalar signed ``//`` and ``%`` by its type's most negative
    constant written out with selects (see the module)."""
    return tvm_ffi.structural_map(
        stmt, [(tirx.FloorDiv, _lowered), (tirx.FloorMod, _lowered)], order="post"
    )


@dataclass(frozen=True)
class CpuMinimumDivisorsPass(PrimFuncPass):
    """Write out floor division by a type's most negative constant (see the module)."""

    name: ClassVar[str] = "cpu-minimum-divisors"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its divisions by a type's most negative constant lowered."""
        return lower_minimum_divisors(body)
