"""`fold-constant-math`: a math function of constants is computed when the kernel is built.

TVM folds arithmetic on constants but not the math intrinsics: ``T.exp2(T.float16(-3.5))``
stayed a call, which the passes that compute half precision in float32 and expand
``exp``/``tanh`` into arithmetic then grew into kilobytes of ``Let``-nested constants;
TVM's passes took about 22 s each on them (a two-minute build of
``T.round(T.exp2(T.float16(-3.5)), "ties-away-from-zero")`` on ``c``), and a bfloat16
``tanh`` of a constant stopped TVM's LLVM code ("BF16 needs to be storaged lowered
first").

This pass, run before those, replaces each call of a pure math function whose operands
are all float constants with its value, computed with numpy as the targets compute it:
float32 and float64 in their own precision, float16 and bfloat16 in float32 and
rounded back to their dtype once (float8 is left to the backend, whose conversions
into it differ). Bottom-up, so a chain of
constant calls becomes one constant. Calls of other operands are left alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import tvm
from tvm import tirx

from tl_ir.dtypes import rounded_constant
from tl_passes.pass_base import PassContext, PrimFuncPass
from tl_passes.wrapping_casts import map_values

__all__ = ["FoldConstantMathPass", "fold_constant_math"]


def _sigmoid(x: Any) -> Any:
    return 1 / (1 + np.exp(-x))


def _rsqrt(x: Any) -> Any:
    return 1 / np.sqrt(x)


def _erf(x: Any) -> Any:
    return type(x)(math.erf(float(x)))


#: TVM's intrinsic name -> numpy's function of the same meaning.
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "tirx.exp": np.exp,
    "tirx.exp2": np.exp2,
    "tirx.exp10": lambda x: np.power(type(x)(10), x),
    "tirx.log": np.log,
    "prim.log2": np.log2,
    "tirx.log10": np.log10,
    "tirx.log1p": np.log1p,
    "tirx.sqrt": np.sqrt,
    "tirx.rsqrt": _rsqrt,
    "tirx.sin": np.sin,
    "tirx.cos": np.cos,
    "tirx.tan": np.tan,
    "tirx.sinh": np.sinh,
    "tirx.cosh": np.cosh,
    "tirx.tanh": np.tanh,
    "tirx.asin": np.arcsin,
    "tirx.acos": np.arccos,
    "tirx.atan": np.arctan,
    "tirx.asinh": np.arcsinh,
    "tirx.acosh": np.arccosh,
    "tirx.atanh": np.arctanh,
    "tirx.erf": _erf,
    "tirx.sigmoid": _sigmoid,
    "tirx.fabs": np.fabs,
    "tirx.floor": np.floor,
    "prim.ceil": np.ceil,
    "tirx.trunc": np.trunc,
    "tirx.round": np.rint,
    "tirx.nearbyint": np.rint,
    "tirx.pow": np.power,
    "tirx.atan2": np.arctan2,
    "tirx.hypot": np.hypot,
    "tirx.copysign": np.copysign,
    "tirx.fmod": np.fmod,
}


def _compute_type(dtype: str) -> type[np.floating[Any]] | None:
    """The numpy type the targets compute ``dtype`` in, or None for a dtype not folded
    (vectors, integers)."""
    if "x" in dtype:
        return None
    if dtype == "float64":
        return np.float64
    if dtype in ("float32", "float16", "bfloat16"):
        return np.float32
    return None  # float8: its conversions are the backend's (saturating or not)


def _fold(call: Any) -> Any:
    if not isinstance(call.op, tvm.ir.Op):
        return call
    function = _FUNCTIONS.get(str(call.op.name))
    dtype = str(getattr(call.ty, "dtype", ""))  # a handle call has a pointer type
    compute = _compute_type(dtype)
    if function is None or compute is None:
        return call
    args = list(call.args)
    if not args or not all(isinstance(arg, tirx.FloatImm) for arg in args):
        return call
    if any(str(arg.ty.dtype) != dtype for arg in args):
        return call
    with np.errstate(all="ignore"):
        value = float(function(*(compute(float(arg.value)) for arg in args)))
    return tirx.FloatImm(dtype, rounded_constant(value, dtype))


def fold_constant_math(stmt: tirx.Stmt) -> tirx.Stmt:
    """``stmt`` with each math call of float constants (in stored values, branch
    conditions and bound values) replaced by its value (module docstring)."""
    return map_values(stmt, (tvm.ir.Call,), _fold)


@dataclass(frozen=True)
class FoldConstantMathPass(PrimFuncPass):
    """Compute math functions of constants when the kernel is built (module docstring)."""

    name: ClassVar[str] = "fold-constant-math"

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its math calls of constants folded."""
        return fold_constant_math(body)
