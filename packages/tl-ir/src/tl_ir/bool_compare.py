"""Equality comparisons of booleans written as TileLang programs write them.

``if Mask[k] != 0:`` on a ``bool`` buffer parses as ``Mask[k] != False``: an
equality between two booleans. TVM's LLVM code generator emits a floating-point
comparison for any operand type that is neither signed nor unsigned integer, so
``llvm`` rejected the kernel (``fcmp one i1``) while ``c`` compiled it. This rewrite,
applied to every parsed kernel, expresses such comparisons with boolean logic
instead: ``b != False`` and ``b == True`` are ``b``; ``b == False`` and
``b != True`` are ``not b``; two non-constant booleans compare as 8-bit integers.
"""

from __future__ import annotations

from typing import Any

import tvm_ffi
from tvm import tirx


def _is_bool(expr: Any) -> bool:
    return str(getattr(expr, "dtype", "")) == "bool"


def _constant(expr: Any) -> bool | None:
    if isinstance(expr, tirx.IntImm):
        return bool(expr.value)
    return None


def _rewrite(node: Any) -> Any:
    equal = isinstance(node, tirx.EQ)
    if not (equal or isinstance(node, tirx.NE)):
        return node
    a, b = node.a, node.b
    if not (_is_bool(a) and _is_bool(b)):
        return node
    value, other = _constant(b), a
    if value is None:
        value, other = _constant(a), b
    if value is None:
        wide_a, wide_b = tirx.Cast("int8", a), tirx.Cast("int8", b)
        return tirx.EQ(wide_a, wide_b) if equal else tirx.NE(wide_a, wide_b)
    # (x == True) and (x != False) are x; the other two are its negation.
    return other if equal == value else tirx.Not(other)


def normalize_bool_comparisons(body: Any) -> Any:
    """``body`` with every ``==``/``!=`` between two booleans rewritten as the module
    docstring says (other comparisons unchanged)."""
    body = tvm_ffi.structural_map(body, (tirx.NE, _rewrite), order="post")
    return tvm_ffi.structural_map(body, (tirx.EQ, _rewrite), order="post")
