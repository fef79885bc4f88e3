"""The IR printer used in dumps and error messages.

Tile ops print under their kernel-language names because every ``tl.*`` op registers
a ``TScriptPrinterName``: ``print(func)`` shows ``T.copy(T.region(A[i, j], 1, 64, 32),
...)`` (the exact encoding), and `format_ir` shows operands as slices,
``T.copy(A[i:i + 64, j:j + 32], S[0:64, 0:32])``.
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi

from tl_ir.ops import describe, is_tile_op

__all__ = ["expr_text", "format_ir", "format_tile_op"]


# tl_ir.ops registered the op on import.
_REGION_OP = tvm.ir.Op.get("tl.region")


def _region_as_slice(call: Any) -> Any:
    if not (isinstance(call.op, tvm.ir.Op) and call.op.same_as(_REGION_OP)):
        return call
    load = call.args[0]
    extents = list(call.args[2:])
    return load.source[tuple(slice(m, m + e) for m, e in zip(load.indices, extents, strict=True))]


def format_ir(node: Any, *, regions: str = "slices") -> str:
    """TVMScript text of a PrimFunc or statement, without the import header lines.

    Args:
        node: a PrimFunc or a statement.
        regions: ``"slices"`` shows tile operands as ``A[lo:hi, ...]``; ``"calls"``
            shows the exact ``T.region(...)`` encoding.

    Raises:
        ValueError: ``regions`` is neither ``"slices"`` nor ``"calls"``.
    """
    if regions not in ("slices", "calls"):
        raise ValueError(f"format_ir: regions must be 'slices' or 'calls', got {regions!r}")
    if regions == "slices":
        if hasattr(node, "with_body"):
            body = tvm_ffi.structural_map(node.body, (tvm.ir.Call, _region_as_slice), order="post")
            node = node.with_body(body)
        else:
            node = tvm_ffi.structural_map(node, (tvm.ir.Call, _region_as_slice), order="post")
    text = str(node.script()) if hasattr(node, "script") else str(node)
    lines = [line for line in text.splitlines() if not line.startswith("# from ")]
    return "\n".join(lines).strip() + "\n"


def expr_text(expr: Any) -> str:
    """One expression as the kernel language writes it, for error messages.

    TVM's default printing renames a buffer whose name is one of its own module
    prefixes (``I``, ``R``): ``I[0]`` would print as ``I_1[0]``, a name the kernel
    never used. Those prefixes are moved out of the way here; ``T`` stays the
    language's own prefix. Anything without a printer is ``str()``-ed.
    """
    script = getattr(expr, "script", None)
    if script is None:
        return str(expr)
    try:
        return str(script(ir_prefix="tvm_ir", extra_config={"relax.prefix": "tvm_relax"})).strip()
    except (TypeError, tvm.error.TVMError):  # a node kind without the TVMScript printer
        return str(expr)


def _fmt_region(region: Any) -> str:
    parts = []
    for lo, ext in zip(region.mins, region.extents, strict=False):
        parts.append(f"{lo}:{lo} + {ext}" if str(ext) != "1" else f"{lo}")
    return f"{region.buffer.name}[{', '.join(parts)}]"


def format_tile_op(call: Any) -> str:
    """A one-line, slice-style rendering of a tile-op call, for error messages:
    ``copy(A[by * 64:by * 64 + 64, 0:0 + 32] -> A_shared[0:0 + 64, 0:0 + 32])``.

    Raises:
        ValueError: ``call`` is not a tile-op call.
    """
    if not is_tile_op(call):
        raise ValueError(f"format_tile_op: expected a tl.* tile-op call, got {call!r}")
    op = describe(call)
    fields = []
    for name, value in vars(op).items():
        if hasattr(value, "buffer") and hasattr(value, "extents"):
            fields.append(f"{name}={_fmt_region(value)}")
        else:
            fields.append(f"{name}={value}")
    return f"{op.name}({', '.join(fields)})"
