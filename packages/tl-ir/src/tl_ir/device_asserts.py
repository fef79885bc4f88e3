"""Device assertions: ``T.device_assert(condition, msg)`` in the IR.

A device assertion is the statement ``Evaluate(tl.device_assert(condition, msg,
location))``: ``condition`` a boolean expression every thread that reaches the
statement checks, ``msg`` the author's message (a ``StringImm``, possibly empty) and
``location`` where it was written (``file:line: source text``, a ``StringImm``;
filled in after parsing by `locate_device_asserts`). It is not a tile op: it names
no tile, and passes that do not lower it keep it as the opaque statement it is.

Each backend lowers it (`DeviceAssert` gives its parts): the CPU targets make a
failing one raise ``AssertionError`` from the kernel call, the reference
interpreter raises at once, CUDA calls its device helper.
"""

from __future__ import annotations

import linecache
from dataclasses import dataclass
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

__all__ = [
    "DEVICE_ASSERT_OP",
    "DeviceAssert",
    "device_assert_of",
    "device_asserts",
    "locate_device_asserts",
    "make_device_assert",
]

#: The op's name in the IR.
DEVICE_ASSERT_OP = "tl.device_assert"


def _register() -> Any:
    # A plain int effect kind: the enum object breaks IsPureFunction (as in tl_ir.ops).
    try:
        existing = tvm.ir.Op.get(DEVICE_ASSERT_OP)
    except Exception:  # tvm reports an unregistered op name as an error
        existing = None
    if existing is None or existing.get_attr("TCallEffectKind") is None:
        opaque = int(tirx.CallEffectKind.Opaque.value)
        tvm.ir.register_op_attr(DEVICE_ASSERT_OP, "TCallEffectKind", opaque)
    if existing is None or existing.get_attr("TScriptPrinterName") is None:
        tvm.ir.register_op_attr(DEVICE_ASSERT_OP, "TScriptPrinterName", "device_assert")
    return tvm.ir.Op.get(DEVICE_ASSERT_OP)


_OP = _register()


@dataclass(frozen=True)
class DeviceAssert:
    """The parts of one ``tl.device_assert`` call.

    Attributes:
        condition: the boolean expression that must hold.
        message: the author's message (``""`` when none was given).
        location: ``file:line: source text`` of the assertion (``""`` when unknown).
    """

    condition: Any
    message: str
    location: str

    def failure_text(self, kernel: str = "") -> str:
        """What a failure of this assertion reports: the kernel (when named), the
        message (or, without one, that the condition was false) and the location."""
        where = f" in kernel {kernel!r}" if kernel else ""
        said = self.message if self.message else "the condition is false"
        at = f" at {self.location}" if self.location else ""
        return f"T.device_assert failed{where}: {said}{at}"


def make_device_assert(condition: Any, message: str, location: str = "") -> Any:
    """The ``tl.device_assert(condition, message, location)`` call (a void intrinsic).

    Raises:
        TypeError: ``condition`` is not a boolean scalar expression, or ``message`` or
            ``location`` is not a str.
    """
    if not tvm.ir.is_prim_expr(condition) or str(condition.ty.dtype) != "bool":
        raise TypeError(
            f"make_device_assert: condition must be a bool expression, got {condition!r}"
        )
    if not isinstance(message, str) or not isinstance(location, str):
        raise TypeError("make_device_assert: message and location must be str")
    return tirx.call_intrin(
        "void", DEVICE_ASSERT_OP, condition, tvm.ir.StringImm(message), tvm.ir.StringImm(location)
    )


def device_assert_of(node: Any) -> DeviceAssert | None:
    """The `DeviceAssert` of ``node`` (a ``tl.device_assert`` call or its ``Evaluate``);
    None for anything else."""
    call = node.value if isinstance(node, tirx.Evaluate) else node
    if not isinstance(call, tvm.ir.Call) or not call.op.same_as(_OP):
        return None
    condition, message, location = call.args
    return DeviceAssert(condition, str(message.value), str(location.value))


def device_asserts(body: Any) -> list[DeviceAssert]:
    """Every device assertion in ``body``, in program order."""
    found: list[DeviceAssert] = []

    def visit(stmt: Any) -> None:
        parts = device_assert_of(stmt)
        if parts is not None:
            found.append(parts)

    tvm_ffi.structural_walk(body, (tirx.Evaluate, visit), order="pre")
    return found


def _span_location(span: Any) -> str:
    name = getattr(getattr(span, "source_name", None), "name", None)
    if span is None or not name:
        return ""
    line = int(span.line)
    text = linecache.getline(str(name), line).strip()
    return f"{name}:{line}: {text}" if text else f"{name}:{line}"


def locate_device_asserts(body: Any) -> Any:
    """``body`` with each device assertion whose location is empty given the location of
    its statement's source span (``file:line: source text``); unchanged without any."""

    def visit(stmt: Any) -> Any:
        parts = device_assert_of(stmt)
        if parts is None or parts.location:
            return stmt
        location = _span_location(stmt.span)
        if not location:
            return stmt
        call = make_device_assert(parts.condition, parts.message, location)
        return tirx.Evaluate(call, span=stmt.span)

    return tvm_ffi.structural_map(body, (tirx.Evaluate, visit), order="post")
