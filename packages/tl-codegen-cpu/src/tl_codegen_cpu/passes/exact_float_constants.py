"""`cpu-exact-float-constants`: float constants reach gcc with every bit they have.

TVM's C printer writes a float constant with seven significant digits
(``6.931458e-01f``). A float32 needs up to nine to round-trip and a float64
seventeen, so a constant such as the high part of ``ln 2`` in `cpu-vectorize-exp`
(chosen for its trailing zero bits), a softmax scale ``log2(e) / sqrt(d)`` or
any float64 literal reached gcc as a different number than the one ``llvm``
compiles: up to a hundred ulps of error in the C path's ``exp`` near its
overflow bound, and c and llvm disagreeing on plain arithmetic.

This pass replaces each float32/float64 constant whose printed form would not
read back as the same value with a call to a marker extern whose name carries
the constant's bits (`EXACT_FLOAT_PREFIX` + ``f32_``/``f64_`` + hex bits); the C
toolchain replaces the call by a C99 hexadecimal float literal
(``0x1.62e4p-1f``), exact by construction. Constants that round-trip (0, 1,
0.5, ``1e-5``, ...) are left alone, so most kernels' C does not change. It is
the last stage of the ``c`` pipeline (after every pass that folds or matches
constants); ``llvm`` prints its constants exactly and does not run it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import tvm
import tvm_ffi
from tvm import tirx

from tl_passes.pass_base import PassContext, PrimFuncPass

#: Marker calls ``<prefix>f32_<8 hex digits>()`` / ``<prefix>f64_<16 hex digits>()``.
EXACT_FLOAT_PREFIX = "tl_exact_"


def printed_as_by_c(value: float, dtype: str) -> float:
    """The value gcc reads back from TVM's C rendering of the constant ``value``.

    TVM prints ``std::scientific`` with the stream's default precision (six digits
    after the point), i.e. Python's ``f"{value:e}"``; gcc rounds that decimal to
    ``dtype``.
    """
    text = f"{value:e}"
    return float(np.float32(text)) if dtype == "float32" else float(text)


def exact_constant_marker(value: float, dtype: str) -> str:
    """The marker extern's name for ``value`` of ``dtype`` (``float32`` or ``float64``).

    Raises:
        ValueError: another dtype.
    """
    if dtype == "float32":
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        return f"{EXACT_FLOAT_PREFIX}f32_{bits:08x}"
    if dtype == "float64":
        bits = struct.unpack("<Q", struct.pack("<d", value))[0]
        return f"{EXACT_FLOAT_PREFIX}f64_{bits:016x}"
    raise ValueError(f"exact_constant_marker: dtype must be float32 or float64, got {dtype}")


def hex_float_literal(marker: str) -> str:
    """The C hexadecimal float literal a marker name stands for (``f`` suffix for f32).

    Raises:
        ValueError: ``marker`` is not a name `exact_constant_marker` writes.
    """
    kind, _, digits = marker.removeprefix(EXACT_FLOAT_PREFIX).partition("_")
    if not marker.startswith(EXACT_FLOAT_PREFIX) or kind not in ("f32", "f64"):
        raise ValueError(f"hex_float_literal: not an exact-constant marker: {marker!r}")
    if kind == "f32" and len(digits) == 8:
        value: float = struct.unpack("<f", struct.pack("<I", int(digits, 16)))[0]
        return f"{value.hex()}f"
    if kind == "f64" and len(digits) == 16:
        double: float = struct.unpack("<d", struct.pack("<Q", int(digits, 16)))[0]
        return double.hex()
    raise ValueError(f"hex_float_literal: not an exact-constant marker: {marker!r}")


#: Scalar dtypes a constant ``reinterpret`` is folded between (same width).
_REINTERPRETABLE = ("float32", "float64", "int32", "int64", "uint32", "uint64")


def fold_constant_reinterprets(stmt: tirx.Stmt) -> tirx.Stmt:
    """Return ``stmt`` with each ``reinterpret`` of a constant replaced by the constant.

    TVM's C printer writes ``reinterpret`` as ``*(T *)(&(x))``, which needs an lvalue:
    ``T.exp`` of an argument the simplifier made constant (`cpu-vectorize-exp` works on
    its bits) printed ``&(1065353216)``, a gcc error.
    """

    def fold(call: Any) -> Any:
        op = call.op
        if not isinstance(op, tvm.ir.Op) or str(op.name) != "tirx.reinterpret":
            return call
        (value,) = call.args
        if not isinstance(value, (tirx.IntImm, tirx.FloatImm)):
            return call
        source = str(value.ty.dtype)
        target = str(getattr(call.ty, "dtype", ""))  # "" for a pointer: left alone
        if source not in _REINTERPRETABLE or target not in _REINTERPRETABLE:
            return call
        array = np.array(value.value).astype(source)
        if array.itemsize != np.dtype(target).itemsize:
            return call
        folded = array.view(target).item()
        if target in ("float32", "float64") and float(folded) == 0.0:
            # A zero kept from the folder (`tl_ir.float_division.products_by_zero_kept`):
            # as a constant, TVM's C build would fold x * 0.0 to 0.
            return tirx.call_pure_extern(target, exact_constant_marker(float(folded), target))
        if target.startswith("float"):
            return tirx.FloatImm(target, float(folded))
        return tirx.IntImm(target, int(folded))

    return tvm_ffi.structural_map(stmt, (tvm.ir.Call, fold), order="post")


def exact_float_constants(stmt: tirx.Stmt) -> tirx.Stmt:
    """Return ``stmt`` with every lossy float32/float64 constant replaced by its marker call
    (after folding ``reinterpret`` of constants, `fold_constant_reinterprets`).

    Infinities and NaN are left alone (the printer names them).
    """
    stmt = fold_constant_reinterprets(stmt)

    def rewrite(node: Any) -> Any:
        dtype = str(node.ty.dtype)
        if dtype not in ("float32", "float64"):
            return node
        value = float(node.value)
        if dtype == "float32":
            # TVM keeps a float32 constant's value as a double; LLVM rounds it to float.
            with np.errstate(over="ignore"):
                value = float(np.float32(value))
        if not np.isfinite(value) or printed_as_by_c(value, dtype) == value:
            return node
        return tirx.call_pure_extern(dtype, exact_constant_marker(value, dtype))

    return tvm_ffi.structural_map(stmt, (tirx.FloatImm, rewrite), order="post")


@dataclass(frozen=True)
class CpuExactFloatConstantsPass(PrimFuncPass):
    """Make lossy float constants exact in TVM's C output (module docstring)."""

    name: ClassVar[str] = "cpu-exact-float-constants"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its lossy float constants replaced by marker calls."""
        return exact_float_constants(body)


__all__ = [
    "EXACT_FLOAT_PREFIX",
    "CpuExactFloatConstantsPass",
    "exact_constant_marker",
    "exact_float_constants",
    "fold_constant_reinterprets",
    "hex_float_literal",
    "printed_as_by_c",
]
