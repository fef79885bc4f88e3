"""Binding a computed operand once, for rewrites whose formulas read it many times.

A formula that reads its operand several times (an fp8 decode, a libm-free ``tanh``)
would copy an unbound operand into each read; along a chain of such rewrites the
expression grows exponentially. `bind_computed` binds the operand with a ``Let`` when
it computes something, and leaves alone what TVM's later legalizations cannot see
through a ``Let``: a value reading a ``bfloat16`` buffer (`reads_bfloat16`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

__all__ = ["bind_computed", "reads_bfloat16"]


def reads_bfloat16(expr: Any) -> bool:
    """Whether ``expr`` loads from a ``bfloat16`` buffer (whose loads TVM's
    ``BF16ComputeLegalize`` does not remap inside a ``Let`` value)."""
    found = False

    def visit(load: Any) -> None:
        nonlocal found
        if str(load.source.dtype) == "bfloat16":
            found = True

    tvm_ffi.structural_walk(expr, (tvm.ir.TensorLoad, visit), order="post")
    return found


def bind_computed(value: Any, name: str, body: Callable[[Any], Any]) -> Any:
    """``body(value)``, with ``value`` bound to a variable named ``name`` by a ``Let``
    when it computes something.

    A load, a variable or a constant (possibly cast or reinterpreted) is used as it is:
    TVM's later legalizations (bf16 on llvm) may copy a ``Let`` and rewrite the copies
    apart, which its LLVM code generator refuses. A value that reads a ``bfloat16``
    buffer is not bound either: ``BF16ComputeLegalize`` retypes the buffer but leaves a
    load inside a ``Let`` value on the old one (bits read as an integer, or a codegen
    error; TileLang's DeepSeek-V4 ``fp8_quant_kernel``: ``x_bf16 / scale`` narrowed to
    fp8); the C compiler merges the copies.
    """
    leaf = value
    while True:
        if isinstance(leaf, tirx.Cast):
            leaf = leaf.value
        elif isinstance(leaf, tvm.ir.Call) and str(leaf.op.name) == "tirx.reinterpret":
            leaf = leaf.args[0]
        else:
            break
    if isinstance(leaf, (tvm.ir.expr.TensorLoad, tirx.Var, tirx.IntImm, tirx.FloatImm)):
        return body(value)
    if reads_bfloat16(value):
        return body(value)
    dtype = str(value.ty.dtype)
    var = tirx.Var(name, dtype)
    return tirx.Let(var, value, body(var))
