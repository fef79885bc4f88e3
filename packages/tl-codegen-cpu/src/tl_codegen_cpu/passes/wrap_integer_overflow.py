"""`cpu-wrap-integer-overflow`: 32-bit integer arithmetic wraps, as on GPUs.

``A[i] + B[i]`` past ``2**31 - 1`` wraps to a negative number on a GPU (PTX
``add.s32``) and in the reference interpreter, and TileLang kernels rely on it (hashes,
overflow checks such as ``a + b < a``). In C a signed overflow is undefined and
TVM's LLVM code generator marks 32- and 64-bit integer arithmetic "no signed/unsigned
wrap", so gcc and LLVM assumed it cannot happen: a sum widened to ``int64`` kept the
unwrapped value on both CPU targets, and an overflow check was folded to false. This
pass computes each 32-bit ``+``, ``-`` and ``*`` in a value a statement stores in 64
bits, where it cannot overflow, and converts the result back, which wraps (C converts
modulo 2**32; LLVM folds the pair into the plain 32-bit instruction without the
no-wrap assumption, gcc's vectorizer narrows it the same way). Index arithmetic
(buffer indices, loop bounds, and values stored into a local an index reads, such as
``k = bx * 64 + i``) is left alone: it stays affine for the vectorizer, and an index
that overflows addresses outside the buffer anyway. 64-bit arithmetic has no wider
type to go through and keeps C's rules (an overflow is undefined). C defines unsigned
arithmetic to wrap, so on ``c`` (``wrap_unsigned=False``) ``uint32`` is left as written;
TVM's LLVM code marks it no-wrap too, so ``llvm`` routes it through 64 bits as well.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
from tvm import tirx

from tl_codegen_cpu.lowering.stored_values import map_stored_values
from tl_passes.pass_base import PassContext, PrimFuncPass

__all__ = ["CpuWrapIntegerOverflowPass", "wrap_integer_overflow"]


def _wider(dtype: str, node: Any, wrap_unsigned: bool) -> str | None:
    """The 64-bit type the 32-bit ``node`` computes in, where it cannot overflow: a
    difference of unsigned values may be negative (and TVM refuses a negative
    unsigned constant), a product of two may exceed ``int64``."""
    if dtype == "int32":
        return "int64"
    if dtype == "uint32" and wrap_unsigned:
        return "int64" if isinstance(node, tirx.Sub) else "uint64"
    return None


def _is_constant(expr: Any) -> bool:
    if isinstance(expr, tirx.Broadcast):
        expr = expr.value
    return isinstance(expr, tirx.IntImm)


def _wrapping(node: Any, wrap_unsigned: bool) -> Any:
    dtype = tvm.DataType(str(node.ty.dtype))
    wider = _wider(str(dtype.with_lanes(1)), node, wrap_unsigned)
    # Constants on both sides are TVM's to fold.
    if wider is None or (_is_constant(node.a) and _is_constant(node.b)):
        return node
    wide = str(tvm.DataType(wider).with_lanes(dtype.lanes))
    return tirx.Cast(str(dtype), type(node)(tirx.Cast(wide, node.a), tirx.Cast(wide, node.b)))


def wrap_integer_overflow(stmt: tirx.Stmt, wrap_unsigned: bool = True) -> tirx.Stmt:
    """``stmt`` with each stored value's 32-bit ``+``/``-``/``*`` wrapping on overflow
    (``int32`` always; ``uint32`` too when ``wrap_unsigned``: leave it False only for a
    code generator whose unsigned arithmetic wraps by itself, as C's does)."""
    return map_stored_values(
        stmt,
        (tirx.Add, tirx.Sub, tirx.Mul),
        lambda node: _wrapping(node, wrap_unsigned),
        skip_indices=True,
    )


@dataclass(frozen=True)
class CpuWrapIntegerOverflowPass(PrimFuncPass):
    """Make 32-bit integer overflow in stored values wrap (module docstring)."""

    name: ClassVar[str] = "cpu-wrap-integer-overflow"
    #: Route ``uint32`` through 64 bits too (``llvm``); ``c`` wraps it by itself.
    wrap_unsigned: bool = True

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its stored 32-bit integer arithmetic wrapping."""
        return wrap_integer_overflow(body, self.wrap_unsigned)
