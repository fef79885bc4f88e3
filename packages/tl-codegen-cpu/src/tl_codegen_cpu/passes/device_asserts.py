"""`cpu-lower-device-asserts`: ``T.device_assert`` as a flag the kernel call checks at its end.

A failing assertion cannot leave a kernel where it fails: blocks run as parallel loops
(OpenMP regions on ``c``, TVM's parallel launch on ``llvm``), which cannot return early.
So the function gets a one-element ``int32`` flag, zero at entry; each assertion
``k`` (1-based, one per distinct message and location) becomes ``if (!cond) flag[0] = k``;
after the whole body, one ``AssertStmt`` per assertion, which TVM's host code turns into
an ``AssertionError`` raised from the kernel call (``T.device_assert failed in kernel
'main': msg at file:line: source``). When several threads fail, the flag keeps one of
their numbers (each writes its own); the kernel has run to its end, so the other
writes of that call happened. A kernel without assertions is unchanged; a passing
assertion costs its condition and a branch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir.device_asserts import DeviceAssert, device_assert_of, device_asserts
from tl_passes.pass_base import PassContext, PrimFuncPass

#: The name of the flag buffer the lowering adds.
FLAG_NAME = "tl_device_assert_failed"
#: The error kind TVM's host code raises (tvm-ffi maps it to Python's ``AssertionError``).
ERROR_KIND = "AssertionError"


def _key(parts: DeviceAssert) -> tuple[str, str]:
    return (parts.message, parts.location)


def lower_device_asserts(func: tirx.PrimFunc, kernel: str) -> tirx.PrimFunc:
    """``func`` with its device assertions lowered (module docstring); unchanged when it
    has none. ``kernel`` names the kernel in the failure messages."""
    found = device_asserts(func.body)
    if not found:
        return func
    numbers: dict[tuple[str, str], int] = {}
    ordered: list[DeviceAssert] = []
    for parts in found:
        if _key(parts) not in numbers:
            numbers[_key(parts)] = len(numbers) + 1
            ordered.append(parts)
    flag = tirx.decl_buffer((1,), "int32", name=FLAG_NAME)
    zero = [tirx.IntImm("int32", 0)]

    def rewrite(stmt: Any) -> Any:
        parts = device_assert_of(stmt)
        if parts is None:
            return stmt
        number = tirx.IntImm("int32", numbers[_key(parts)])
        store = tirx.BufferStore(flag, number, zero)
        return tirx.IfThenElse(tirx.Not(parts.condition), store, None)

    body = tvm_ffi.structural_map(func.body, (tirx.Evaluate, rewrite), order="post")
    checks = [
        tirx.AssertStmt(
            # tirx.AssertStmt's Python signature names (kind, condition) but passes them
            # on in the order of the FFI constructor, (condition, kind).
            tirx.NE(tirx.BufferLoad(flag, zero), tirx.IntImm("int32", number)),
            tvm.ir.StringImm(ERROR_KIND),
            [tvm.ir.StringImm(parts.failure_text(kernel))],
        )
        for number, parts in enumerate(ordered, start=1)
    ]
    new_body = tirx.SeqStmt(
        [tirx.AllocBuffer(flag), tirx.BufferStore(flag, zero[0], zero), body, *checks]
    )
    return func.with_body(new_body)


@dataclass(frozen=True)
class CpuLowerDeviceAssertsPass(PrimFuncPass):
    """Lower ``T.device_assert`` to a failure flag checked after the body (module doc)."""

    name: ClassVar[str] = "cpu-lower-device-asserts"

    def transform_function(
        self, func: tirx.PrimFunc, function_name: str, ctx: PassContext
    ) -> tirx.PrimFunc:
        """``func`` with its device assertions lowered."""
        symbol = func.attrs.get("global_symbol") if func.attrs is not None else None
        return lower_device_asserts(func, str(symbol) if symbol is not None else function_name)
