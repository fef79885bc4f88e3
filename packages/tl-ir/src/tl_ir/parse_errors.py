"""What a kernel statement the parser could not build did wrong, from the exception.

TVM's builders answer a wrong operand with their own texts: an FFI signature
("Mismatched type on argument #1 when calling `script.ir_builder.tirx.BufferStore(0:
ir.Var, ...)`. Expected `ir.Expr` but got `ffi.SmallStr`") or a C++ check ("`lhs` is
null in the binary operator"). The language checks the common mistakes where the
kernel names them (`tl_ir.element_operands`, `tl_ir.language._operand_guards`); what
reaches TVM anyway is translated here into the kind of operand expected and the kind
that came, with TVM's text kept at the end. The error is located at the statement by
the parser's diagnostics (`tl_ir.frontend`).
"""

from __future__ import annotations

import os
import re

from tl_ir.constant_casts import out_of_range_message
from tl_ir.errors import (
    KernelSyntaxError,
    KernelTypeError,
    TileLangError,
    TileLangInternalError,
)

__all__ = ["classify_parse_error", "translated_tvm_text"]

#: TVM's FFI type names, as a kernel author knows the values.
_KINDS = {
    "ir.Expr": "a scalar value or expression",
    "ir.Var": "a tile or tensor (a buffer, not one of its elements)",
    "ffi.SmallStr": "a string",
    "ffi.Str": "a string",
    "ffi.String": "a string",
    "ffi.Array": "a list or tuple",
    "ffi.Map": "a dict",
    "ffi.Tensor": "an array",
    "ffi.OpaquePyObject": "a Python object TVM cannot convert",
    "ir.Call": "a call with no scalar result",
    "ir.TensorRegion": "a slice of a tile or tensor",
    "None": "None",
}

_MISMATCH = re.compile(
    r"Mismatched type on argument #(\d+) when calling: `([\w.]+)\(.*?Expected `(.+?)` but "
    r"got `(.+?)`",
    re.S,
)


def _kind(name: str) -> str:
    for key, kind in _KINDS.items():
        if key in name:
            return kind
    return name


def _callee(name: str) -> str:
    """``T.<name>`` for TVM's builder path (``script.ir_builder.tirx.max``)."""
    short = name.rsplit(".", 1)[-1]
    return {"BufferStore": "a store (A[...] = value)", "convert": "a math function"}.get(
        short, f"T.{short}"
    )


def _tvm(text: str) -> str:
    return f" (TVM: {text.splitlines()[0][:160]})"


def translated_tvm_text(text: str) -> str | None:
    """The mistake TVM's ``text`` reports, in the kernel's terms (the callee, the
    operand's position, the kind expected and the kind that came), or None when the
    text is not one of the known mistakes."""
    match = _MISMATCH.search(text)
    if match is not None:
        position, callee, expected, got = match.groups()
        return f"{_callee(callee)}: operand {position} must be {_kind(expected)}, got {_kind(got)}"
    if (
        "is null in the binary operator" in text
        or "Cannot determine Expr type for NoneType" in text
    ):
        return "an operand of an operator or function is None; expected a value" + _tvm(text)
    if re.search(r"Check failed: \(\w+\.defined\(\)\) is false", text):
        return "an operand is None (or missing); expected a value" + _tvm(text)
    literal = re.search(r"Literal value (\S+) exceeds maximum of (\w+)", text)
    if literal is not None:
        value, dtype = literal.groups()
        return (
            f"the constant {value} is beyond the largest finite {dtype}; write "
            f'T.infinity("{dtype}") for infinity, or compute in a wider dtype'
        )
    if "Buffer slices with a non-unit step" in text:
        return (
            "a slice read with a step (A[0:8:2]) is not supported: read the elements in a "
            "loop (A[2 * i]) or copy the tile with T.copy"
        )
    if "Operand should be a Expr" in text or re.search(r"operand type\(s\) for .*'Var'", text):
        return (
            "a tile or tensor is not a value: an operator takes its elements (S[i] inside a "
            "T.Parallel loop), a tile op (T.copy, T.reduce_*) the whole tile" + _tvm(text)
        )
    if "Unexpected type for TIR Arg" in text:
        return (
            "a kernel parameter's annotation must be T.Tensor(shape, dtype), T.Buffer, "
            "T.StridedTensor or a scalar dtype (T.float32, T.int32)" + _tvm(text)
        )
    return None


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _raised_in_tl_ir(cause: BaseException) -> bool:
    """Whether the innermost Python frame of ``cause`` is tl_ir's own code."""
    tb = cause.__traceback__
    last = None
    while tb is not None:
        last = tb
        tb = tb.tb_next
    if last is None:
        return False
    return os.path.abspath(last.tb_frame.f_code.co_filename).startswith(_PACKAGE_DIR + os.sep)


def classify_parse_error(cause: BaseException | None, message: str) -> TileLangError:
    """The `TileLangError` for an exception ``cause`` (with the parser's ``message``)
    raised while a kernel statement was parsed: an exception of tl_ir's own code is an
    internal error; TVM's texts for mistakes a kernel makes are translated into what
    the mistake is (`translated_tvm_text`); others keep TVM's text."""
    text = message.strip() or (type(cause).__name__ if cause is not None else "error")
    if cause is not None and _raised_in_tl_ir(cause):
        return TileLangInternalError(
            f"internal error in tl_ir while parsing this statement "
            f"({type(cause).__name__}: {cause}); please report it with the kernel"
        )
    if isinstance(cause, NameError) or "Undefined variable" in text:
        return KernelSyntaxError(f"unknown name in kernel: {text}")
    if isinstance(cause, AttributeError):
        return KernelSyntaxError(f"unknown attribute in kernel: {text}")
    if isinstance(cause, TypeError) and ("list indices" in text or "tuple indices" in text):
        return KernelTypeError(
            f"invalid operand: {text}; a Python list or tuple is read while parsing, so "
            "its index must be a compile-time value: for an index known only at run time, "
            "store the values in a tile (T.alloc_local) and index that"
        )
    if "MatchesCode(DLDataTypeCode::kDLInt, DLDataTypeCode::kDLUInt)" in text:
        # TVM's check when // or % (or a shift, a bitwise op) meets a float operand
        return KernelTypeError(
            "invalid operand: //, %, shifts and bitwise operators take integer operands, "
            "got a float one; for floats write T.floor(a / b) (and a - b * T.floor(a / b) "
            f"for the remainder). TVM: {text.splitlines()[0][:200]}"
        )
    out_of_range = out_of_range_message(text)
    if out_of_range is not None:
        return KernelTypeError(out_of_range)
    if "Divide by zero" in text:  # TVM folds a constant divisor of 0 (as in TileLang)
        return KernelTypeError(
            "invalid operand: the divisor of //, %, T.floordiv, T.floormod, T.truncdiv or "
            "T.truncmod is the constant 0; expected a non-zero constant or a value known at "
            "run time (a divisor of 0 at run time gives quotient 0, remainder the dividend)"
        )
    if "Minuend" in text and "negative uint" in text:
        # TVM folds a difference of two unsigned constants and refuses a negative one
        return KernelTypeError(
            "invalid operand: a difference of two unsigned constants is negative (such as "
            "T.uint8(0) - T.uint8(255)); constants are folded when the kernel is built and "
            "an unsigned constant cannot be negative: write the wrapped value (T.uint8(1)) "
            "or subtract in a signed type"
        )
    translated = translated_tvm_text(text)
    if translated is not None:
        return KernelTypeError(translated)
    if isinstance(cause, TypeError | ValueError):
        return KernelTypeError(f"invalid operand: {text}")
    return KernelSyntaxError(f"cannot parse this kernel statement: {text}")
