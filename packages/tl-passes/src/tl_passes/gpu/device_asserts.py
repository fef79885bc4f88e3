"""``T.device_assert`` as the target's device function (`GpuTraits.device_assert`).

Runs inside `gpu-lower-tile-ops`, on the per-thread code: each assertion
(`tl_ir.device_asserts`) becomes ``name(condition, "message")``, the message saying
the kernel, the author's text and the source line. A target without such a function
refuses the kernel: dropping the check would hide the failure it exists to report.
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir.device_asserts import device_assert_of
from tl_passes.gpu.errors import GpuLoweringError
from tl_passes.gpu.traits import GpuTraits


def escaped(text: str) -> str:
    """``text`` as the inside of a C string literal: TVM's device codegens print a
    ``StringImm`` between quotes as it is (a quote in a message ended the literal)."""
    out: list[str] = []
    for char in text:
        if char in '\\"':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif ord(char) < 32 or ord(char) == 127:
            out.append(" ")
        else:
            out.append(char)
    return "".join(out)


def lower_device_asserts(body: Any, traits: GpuTraits, kernel: str = "") -> Any:
    """``body`` with every device assertion a call of ``traits.device_assert``.

    Args:
        body: a kernel body (after the tile ops are lowered).
        traits: the target's traits.
        kernel: the kernel's name, for the message (empty: not named).

    Raises:
        GpuLoweringError: the body has an assertion and the target has no device
            assert (``traits.device_assert`` is None).
    """
    found: list[str] = []

    def rewrite(stmt: Any) -> Any:
        parts = device_assert_of(stmt)
        if parts is None:
            return stmt
        found.append(parts.location)
        if traits.device_assert is None:
            return stmt
        text = tvm.ir.StringImm(escaped(parts.failure_text(kernel)))
        return tirx.Evaluate(tirx.call_extern("void", traits.device_assert, parts.condition, text))

    lowered = tvm_ffi.structural_map(body, (tirx.Evaluate, rewrite), order="post")
    if found and traits.device_assert is None:
        at = f" (at {found[0]})" if found[0] else ""
        raise GpuLoweringError(
            f"T.device_assert is not supported on target '{traits.name}'{at}: the target "
            "declares no device assert (GpuTraits.device_assert); remove it for this "
            "target, or check the condition on c, llvm or cuda"
        )
    return lowered
