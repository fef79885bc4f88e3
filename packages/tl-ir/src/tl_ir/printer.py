"""The IR printer used in dumps and error messages.

Tile ops print under their kernel-language names (``T.copy(T.region(A[i, j], 1, 64,
32), ...)``) because every ``tl.*`` op registers a ``TScriptPrinterName``;
``print(func)`` gives the same text.
"""

from __future__ import annotations

from typing import Any

from tl_ir.ops import describe, is_tile_op

__all__ = ["format_ir", "format_tile_op"]


def format_ir(node: Any) -> str:
    """TVMScript text of a PrimFunc or statement, without the import header lines."""
    text = str(node.script()) if hasattr(node, "script") else str(node)
    lines = [line for line in text.splitlines() if not line.startswith("# from ")]
    return "\n".join(lines).strip() + "\n"


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
