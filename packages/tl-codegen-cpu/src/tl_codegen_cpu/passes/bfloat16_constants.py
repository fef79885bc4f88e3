"""bfloat16 constants as their bits, for TVM's bfloat16 legalization (used by `cpu-round-bfloat16`).

TVM's bfloat16 legalization, inside its C and LLVM code generators, computes a stored
bfloat16 constant as float32 and narrows it with bit arithmetic on
``reinterpret(uint32, 3.0f)``: ``c`` printed the address of a constant,
``*(uint32_t *)(&(3.000000e+00f))``, a gcc error ("lvalue required as unary '&'
operand"), for ``O[j] = T.bfloat16(3.0)``, ``T.fill(bf16_tile, 3.0)`` and
``T.clear(bf16_tile)``. So, as `cpu-legalize-float8` does for float8:

* a scalar cast of a constant to or from bfloat16 is computed now, with the
  run-time conversion's rounding (through float32, to nearest, ties to even, as
  ``ml_dtypes``): to bfloat16 it gives a bfloat16 constant, from bfloat16 the value
  as float32 (cast on to the target, which later passes fold);
* a bfloat16 constant stored as it is (``O[j] = 3.0``, a fill), or a branch of a
  bfloat16 select, becomes its 16-bit code, ``reinterpret(bfloat16, uint16 code)``,
  which the legalization stores (or selects) as the integer. Constants inside
  arithmetic stay values (pass 8 widened that arithmetic to float32, and the first
  rule folds the widening).

On ``llvm`` TVM's vectorizer broadcasts a lane-uniform bfloat16 value (a constant, a
fill, ``O[j] = B[0]``) and its legalization then refused the store ("dtype mismatch
on BufferStore: buffer's dtype is uint16 ... RHS's dtype is bfloat16x32"): such a
vector loop runs as a scalar loop (`legalize_float8.serialize_uniform_float8_stores`), whose 16-bit stores
LLVM vectorizes itself.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import tvm
import tvm_ffi
from tvm import tirx

from tl_ir.builtin_ops import builtin_op_name

__all__ = ["bfloat16_code", "bfloat16_constants_as_codes"]

_IF_THEN_ELSE = builtin_op_name("if_then_else")


def _dtype(expr: Any) -> str:
    dtype = getattr(getattr(expr, "ty", None), "dtype", None)
    return "" if dtype is None else str(dtype)


def bfloat16_code(value: float) -> int:
    """The 16-bit code of ``value`` in bfloat16: rounded to float32, then to nearest
    even in bfloat16 (NaN kept, beyond the largest finite value infinity)."""
    with np.errstate(over="ignore", invalid="ignore"):
        single = np.array([value], np.float32)
        return int(single.astype(ml_dtypes.bfloat16).view(np.uint16)[0])


def _bfloat16_value(code: int) -> float:
    return float(np.array([code], np.uint16).view(ml_dtypes.bfloat16)[0])


def _constant_code(expr: Any) -> int | None:
    """The code of the scalar bfloat16 constant ``expr`` (a ``FloatImm`` or a
    ``reinterpret`` of a ``uint16`` constant), or None."""
    if isinstance(expr, tirx.FloatImm) and _dtype(expr) == "bfloat16":
        return bfloat16_code(float(expr.value))
    if isinstance(expr, tvm.ir.Call) and str(getattr(expr.op, "name", "")) == "tirx.reinterpret":
        (operand,) = expr.args
        if _dtype(expr) == "bfloat16" and isinstance(operand, tirx.IntImm):
            return int(operand.value) if _dtype(operand) == "uint16" else None
    return None


def _code_constant(code: int) -> Any:
    return tirx.reinterpret("bfloat16", tirx.const(code, "uint16"))


def _fold_cast(node: Any) -> Any:
    """A scalar cast of a constant to or from bfloat16, computed now (module)."""
    target, source = _dtype(node), _dtype(node.value)
    if target == source or "bfloat16" not in (target, source):
        return node
    if source == "bfloat16":
        code = _constant_code(node.value)
        if code is None:
            return node
        widened = tirx.FloatImm("float32", _bfloat16_value(code))
        return widened if target == "float32" else tirx.Cast(target, widened)
    if target != "bfloat16" or not isinstance(node.value, tirx.IntImm | tirx.FloatImm):
        return node
    if source.startswith("float8"):
        return node  # cpu-legalize-float8 has made its fp8 constants codes
    return tirx.FloatImm("bfloat16", _bfloat16_value(bfloat16_code(float(node.value.value))))


def _store_code(store: Any) -> Any:
    """``store`` with a bfloat16 constant it stores as it is written as its code."""
    value = store.value
    broadcast = isinstance(value, tirx.Broadcast)
    scalar = value.value if broadcast else value
    if not (isinstance(scalar, tirx.FloatImm) and _dtype(scalar) == "bfloat16"):
        return store
    code = _code_constant(bfloat16_code(float(scalar.value)))
    coded = tirx.Broadcast(code, value.lanes) if broadcast else code
    return tirx.BufferStore(store.buffer, coded, list(store.indices))


def _as_code(value: Any) -> Any:
    if isinstance(value, tirx.FloatImm) and _dtype(value) == "bfloat16":
        return _code_constant(bfloat16_code(float(value.value)))
    return value


def _select_codes(node: Any) -> Any:
    """A bfloat16 select (``T.if_then_else``) with a constant branch: the branch as its
    code, as a stored constant is (the legalization selects between the codes; ``c``
    printed the constant with seven digits, 2**24 as 16777220)."""
    if _dtype(node) != "bfloat16":
        return node
    if isinstance(node, tirx.Select):
        true_value, false_value = _as_code(node.true_value), _as_code(node.false_value)
        if true_value.same_as(node.true_value) and false_value.same_as(node.false_value):
            return node
        return tirx.Select(node.condition, true_value, false_value)
    if str(getattr(node.op, "name", "")) != _IF_THEN_ELSE:
        return node
    condition, true_value, false_value = node.args
    coded = [_as_code(true_value), _as_code(false_value)]
    if coded[0].same_as(true_value) and coded[1].same_as(false_value):
        return node
    return tirx.if_then_else(condition, coded[0], coded[1])


def bfloat16_constants_as_codes(stmt: tirx.Stmt) -> tirx.Stmt:
    """``stmt`` with its scalar casts of constants to and from bfloat16 computed and the
    bfloat16 constants it stores or selects written as their codes (see the module)."""
    folded = tvm_ffi.structural_map(stmt, (tirx.Cast, _fold_cast), order="post")
    folded = tvm_ffi.structural_map(
        folded, ((tirx.Select, tvm.ir.Call), _select_codes), order="post"
    )
    return tvm_ffi.structural_map(folded, (tirx.BufferStore, _store_code), order="post")
