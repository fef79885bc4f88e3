"""`cpu-max-min-ignore-nan`: float ``max``/``min`` return the other operand of a NaN.

The language's float ``T.max``/``T.min``, and every max/min reduction, scan and
reducer built on them, follow the GPU: CUDA's ``fmaxf``/``fminf`` (what TileLang's
``reduce_max`` and ``T.max`` compile to) return the operand that is not NaN, and NaN
only when both are. TVM's CPU code generators print ``a > b ? a : b`` (``c``) or a
compare and select (``llvm``), where a NaN is kept in one operand position and dropped
in the other, so a reduction's result depended on where in the row the NaN sat. This
pass, which runs after the half-precision legalizations (so it sees the float32
arithmetic they leave), rewrites each float ``Max(a, b)`` as ``isnan(b) || a > b ? a :
b`` (``<`` for ``Min``): equal to ``fmax`` for every pair of values, position
independent, and two compares, an or and a blend per lane, so the loops vectorize as
before. The NaN test is ``isnan`` (``x != x`` would be folded to false by TVM's
simplifier); operands that are not plain variables, loads or constants are bound once
by a ``Let``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.nan_rule import is_float, max_min_ignoring_nan
from tl_passes.pass_base import PassContext, PrimFuncPass

__all__ = ["CpuMaxMinIgnoreNanPass", "max_min_node_ignoring_nan", "rewrite_max_min"]

#: Expressions cheap to repeat (no Let; also under casts): compilers load or compute
#: them once anyway. Anything else is bound by a Let, so nested max/min do not grow
#: threefold per level.
_SIMPLE = (tirx.Var, tvm.ir.TensorLoad, tirx.FloatImm, tirx.IntImm, tirx.Broadcast)

#: The LLVM intrinsics with the rule (IEEE 754 maxNum/minNum: the operand that is not
#: NaN), which LLVM vectorizes (a max, an unordered compare and a blend per vector).
_LLVM_INTRINSICS = {tirx.Max: "llvm.maxnum", tirx.Min: "llvm.minnum"}


def _cheap(value: Any) -> bool:
    while isinstance(value, tirx.Cast):
        value = value.value
    return isinstance(value, _SIMPLE)


def _bound(value: Any, name: str) -> tuple[Any, tirx.Var | None]:
    # (`cpu-inline-bfloat16-lets` inlines a value computed from bfloat16 later on.)
    if _cheap(value):
        return value, None
    return tirx.Var(name, value.ty.dtype), value


def max_min_node_ignoring_nan(node: Any, llvm_intrinsics: bool = False) -> Any:
    """The float ``Max``/``Min`` ``node`` with the GPU's NaN rule (``fmax``/``fmin``):
    ``llvm.maxnum``/``llvm.minnum`` (``llvm_intrinsics``), else a select; ``node``
    unchanged for other dtypes. 16-bit floats are compared in float32 (exact)."""
    dtype = str(node.ty.dtype)
    if not is_float(dtype):
        return node
    if dtype.startswith(("bfloat16", "float16")):
        # TVM's own bfloat16 legalization (in its code generators) mangles a select of
        # bfloat16 values; the max of two 16-bit values is one of them, so narrowing
        # the float32 result back is exact.
        wide = "float32" + dtype[dtype.index("16") + 2 :]
        widened = type(node)(tirx.Cast(wide, node.a), tirx.Cast(wide, node.b))
        return tirx.Cast(dtype, max_min_node_ignoring_nan(widened, llvm_intrinsics))
    if llvm_intrinsics:
        return tirx.call_llvm_pure_intrin(dtype, _LLVM_INTRINSICS[type(node)], node.a, node.b)
    a, a_value = _bound(node.a, "max_a" if isinstance(node, tirx.Max) else "min_a")
    b, b_value = _bound(node.b, "max_b" if isinstance(node, tirx.Max) else "min_b")
    result = max_min_ignoring_nan(a, b, larger=isinstance(node, tirx.Max))
    if b_value is not None:
        result = tirx.Let(b, b_value, result)
    if a_value is not None:
        result = tirx.Let(a, a_value, result)
    return result


def rewrite_max_min(stmt: tirx.Stmt, llvm_intrinsics: bool = False) -> tirx.Stmt:
    """``stmt`` with every float ``Max``/``Min`` ignoring a NaN operand."""

    def rewrite(node: Any) -> Any:
        return max_min_node_ignoring_nan(node, llvm_intrinsics)

    return tvm_ffi.structural_map(stmt, ((tirx.Max, tirx.Min), rewrite), order="post")


def with_unique_let_vars(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func`` with every ``Let`` variable bound once (TVM's ConvertSSA).

    A rewrite through ``structural_map`` maps one shared sub-expression to one result,
    so a ``Let`` it introduces is bound wherever that sub-expression was used; TVM's
    LLVM code generator refuses a variable bound twice ("Let cannot bind the same var
    to two different values") once its vectorizer has widened one of the places."""
    module = tvm.IRModule({"main": func})
    return tirx.transform.ConvertSSA()(module)["main"]


@dataclass(frozen=True)
class CpuMaxMinIgnoreNanPass(PrimFuncPass):
    """Give float max/min the GPU's NaN rule (module docstring)."""

    name: ClassVar[str] = "cpu-max-min-ignore-nan"
    #: ``llvm``: LLVM's ``maxnum``/``minnum`` intrinsics; ``c``: selects gcc vectorizes.
    llvm_intrinsics: bool = False

    def transform_function(
        self, func: tirx.PrimFunc, function_name: str, ctx: PassContext
    ) -> tirx.PrimFunc:
        """Return ``func`` rewritten, each ``Let`` it introduces bound once."""
        body = rewrite_max_min(func.body, self.llvm_intrinsics)
        if body.same_as(func.body):
            return func
        return with_unique_let_vars(func.with_body(body))
