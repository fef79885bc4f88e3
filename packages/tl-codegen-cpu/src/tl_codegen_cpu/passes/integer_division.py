"""`cpu-integer-division-without-traps`: an integer division never kills the process.

x86's integer divide traps (SIGFPE: the Python process dies) on a zero divisor and on
the most negative value divided by -1, where a GPU's division returns a value and goes
on. A kernel computing ``A[i] // B[i]`` or ``A[i] % B[i]`` (and ``T.truncdiv``,
``T.truncmod``) from data is one bad element away from that, so this pass gives every
integer division whose divisor is not a constant other than 0 and -1, in a value a
statement stores, a defined result instead:

* divisor 0: quotient 0, remainder the dividend (``q * b + r == a`` still holds);
* divisor -1: quotient ``-a`` (the most negative value wraps to itself), remainder 0.

Written as selects on the divisor, which stays the divisor everywhere else, so the
division itself (already slow and rarely vectorized) is unchanged. Index arithmetic
(a buffer's indices, loop bounds) is left alone: a symbolic dim divides there, and
the selects would hide the affine forms the simplifier and vectorizer rely on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tvm import tirx

from tl_codegen_cpu.lowering.stored_values import map_stored_values
from tl_ir.index_ranges import range_analyzer
from tl_passes.pass_base import PassContext, PrimFuncPass

__all__ = ["CpuIntegerDivisionWithoutTrapsPass", "division_without_traps"]

_QUOTIENTS = (tirx.Div, tirx.FloorDiv)
_REMAINDERS = (tirx.Mod, tirx.FloorMod)


def _is_integer(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))


def division_without_traps(node: Any, analyzer: Any = None) -> Any:
    """The integer division/modulo ``node`` with a defined result for a divisor of 0 or
    -1 (module docstring); ``node`` unchanged for floats and safe constant divisors.

    ``analyzer`` (a ``tvm.sym.Analyzer``, optional): a divisor it bounds to exactly 0
    (``x % (T.uint8(0) // y)``) gives the defined result with no division left, since
    TVM's bound analysis stops with an internal error on a division by a provable 0
    (even in a branch that never runs)."""
    dtype = str(node.ty.dtype)
    if not _is_integer(dtype):
        return node
    signed = not dtype.startswith("uint")
    divisor = node.b
    constant = int(divisor.value) if isinstance(divisor, tirx.IntImm) else None
    if constant is not None and constant != 0 and (not signed or constant != -1):
        return node
    zero, one = tirx.const(0, dtype), tirx.const(1, dtype)
    if analyzer is not None and constant is None and _is_exactly_zero(analyzer, divisor):
        return zero if isinstance(node, _QUOTIENTS) else node.a
    # The operands are repeated, not bound by a Let: TVM's later passes copy
    # expressions (a loop partition, the vectorizer) and refuse a Let variable
    # bound in two places. Divisions by run-time values are rarely nested.
    a, b = node.a, divisor
    is_zero = b == zero
    unsafe = tirx.Or(is_zero, b == tirx.const(-1, dtype)) if signed else is_zero
    safe = type(node)(a, tirx.Select(unsafe, one, b))
    if isinstance(node, _QUOTIENTS):
        result = tirx.Select(is_zero, zero, safe)
        if signed:
            result = tirx.Select(b == tirx.const(-1, dtype), zero - a, result)
    else:
        result = tirx.Select(is_zero, a, safe)
        if signed:
            result = tirx.Select(b == tirx.const(-1, dtype), zero, result)
    return result


def _is_exactly_zero(analyzer: Any, value: Any) -> bool:
    if value.ty.dtype.lanes != 1:
        return False
    bound = analyzer.const_int_bound(value)
    return int(bound.min_value) == 0 and int(bound.max_value) == 0


def rewrite_divisions(stmt: tirx.Stmt) -> tirx.Stmt:
    """``stmt`` with every stored value's integer divisions unable to trap."""
    analyzers: list[Any] = []  # built at the first run-time divisor: most kernels have none

    def rewrite(node: Any) -> Any:
        if not _is_integer(str(node.ty.dtype)) or isinstance(node.b, tirx.IntImm):
            return division_without_traps(node)
        if not analyzers:
            analyzers.append(range_analyzer(stmt))
        return division_without_traps(node, analyzers[0])

    return map_stored_values(stmt, (*_QUOTIENTS, *_REMAINDERS), rewrite)


@dataclass(frozen=True)
class CpuIntegerDivisionWithoutTrapsPass(PrimFuncPass):
    """Give integer division by 0 and by -1 a result instead of a trap (module docstring)."""

    name: ClassVar[str] = "cpu-integer-division-without-traps"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its stored integer divisions unable to trap."""
        return rewrite_divisions(body)
