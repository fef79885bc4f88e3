"""``T.assume`` conditions the host can evaluate are checked when the kernel is called.

``T.assume(N % 4 == 0)`` tells the optimizer a fact it may build on (LLVM vectorizes a
guarded store ``tx < N`` in blocks of four); a call where the fact is false would then
compute on a promise that does not hold, and write past the end of a two-element
array. When the condition names only what the caller passes (scalar parameters and
the symbolic dims of tensor parameters), TileLang checks it before the launch and
raises ``RuntimeError("Assume: N % 4 == 0 ...")``; so does this language, with an
assertion at the top of the function, which every backend's host code and the
interpreter evaluate before any block runs. A condition on values computed inside the
kernel (thread indices, loaded data) stays a hint.
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

__all__ = ["ASSUME_ERROR_KIND", "check_host_assumes", "host_values"]

#: The error kind the host's assertion raises (tvm-ffi maps it to Python's RuntimeError).
ASSUME_ERROR_KIND = "RuntimeError"


def host_values(func: Any) -> list[Any]:
    """The variables a caller gives ``func``: its scalar parameters and the symbolic
    dims of its tensor parameters."""
    found: list[Any] = []
    for param in func.params:
        ty = getattr(param, "ty", None)
        if isinstance(ty, tirx.BufferType):
            found.extend(dim for dim in ty.shape if isinstance(dim, tvm.ir.Var))
        else:
            found.append(param)
    return found


def _free_vars(expr: Any) -> list[Any]:
    found: list[Any] = []
    tvm_ffi.structural_walk(expr, (tvm.ir.Var, found.append))
    return found


def _is_assume(call: Any) -> bool:
    op = getattr(call, "op", None)
    return str(getattr(op, "name", "")) == "tirx.assume" and len(call.args) == 1


def check_host_assumes(func: Any) -> Any:
    """``func`` with an assertion at its top for each distinct ``T.assume`` whose
    condition reads only ``host_values(func)`` (module docstring); unchanged when
    there is none."""
    host = host_values(func)
    conditions: list[Any] = []

    def visit(call: Any) -> None:
        if not _is_assume(call):
            return
        condition = call.args[0]
        names = _free_vars(condition)
        if not names or not all(any(v.same_as(h) for h in host) for v in names):
            return
        if not any(tvm_ffi.structural_equal(condition, seen) for seen in conditions):
            conditions.append(condition)

    tvm_ffi.structural_walk(func.body, (tvm.ir.Call, visit))
    if not conditions:
        return func
    checks = [
        tirx.AssertStmt(
            # tirx.AssertStmt's Python signature names (kind, condition) but passes them
            # on in the order of the FFI constructor, (condition, kind).
            condition,
            tvm.ir.StringImm(ASSUME_ERROR_KIND),
            [tvm.ir.StringImm(f"Assume: {condition} does not hold for this call's arguments")],
        )
        for condition in conditions
    ]
    return func.with_body(tirx.SeqStmt([*checks, func.body]))
