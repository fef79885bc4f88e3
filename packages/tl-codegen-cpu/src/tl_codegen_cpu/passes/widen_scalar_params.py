"""`cpu-widen-scalar-params`: bfloat16 and float8 scalar parameters arrive as float32.

TVM's host code reads a float scalar argument as a C ``double`` and converts it to
the parameter's type; it has no conversion to ``bfloat16`` or the float8 types and
stopped with an internal check failure (``dtype.code() == kDLFloat``) for a kernel
declaring ``x: T.bfloat16``. This pass declares such a parameter ``float32`` and
uses ``T.Cast(original dtype, x)`` wherever the body read it, so the kernel computes
with exactly the value the declared type holds (`cpu-round-bfloat16` keeps TVM from
dropping the bfloat16 rounding). The manifest keeps the declared
dtype (it is written from the kernel before lowering): the runtime rounds the
caller's value to that type and range-checks it first, so the widening never
changes a result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_passes.pass_base import PassContext, PrimFuncPass

#: Scalar dtypes TVM's host argument code cannot convert to.
NARROW_FLOATS = frozenset({"bfloat16", "float8_e4m3fn", "float8_e5m2"})


@dataclass(frozen=True)
class CpuWidenScalarParamsPass(PrimFuncPass):
    """Declare bfloat16/float8 scalar parameters float32 (module docstring)."""

    name: ClassVar[str] = "cpu-widen-scalar-params"

    def transform_function(
        self, func: tirx.PrimFunc, function_name: str, ctx: PassContext
    ) -> tirx.PrimFunc:
        """Return ``func`` with its narrow float scalar parameters widened (itself when
        it has none)."""
        replaced: list[tuple[Any, Any]] = []
        params = []
        for param in func.params:
            dtype = getattr(param.ty, "dtype", None)
            if isinstance(param.ty, tvm.ir.PrimType) and str(dtype) in NARROW_FLOATS:
                wide = tirx.Var(str(param.name), "float32")
                replaced.append((param, tirx.Cast(str(dtype), wide)))
                params.append(wide)
            else:
                params.append(param)
        if not replaced:
            return func

        def substitute(var: Any) -> Any:
            for old, new in replaced:
                if var.same_as(old):
                    return new
            return var

        body = tvm_ffi.structural_map(func.body, (tvm.ir.Var, substitute), order="post")
        return tirx.PrimFunc(params, body, ret_type=func.ret_type, attrs=func.attrs)


__all__ = ["NARROW_FLOATS", "CpuWidenScalarParamsPass"]
