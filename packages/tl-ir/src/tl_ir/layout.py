"""Memory-layout helpers TileLang programs import as ``tilelang.layout`` (here
``tl_jit.layout``), for ``T.annotate_layout({buffer: make_swizzled_layout(buffer)})``.

A swizzled or linear layout only rearranges where a tile's elements sit in shared
memory, never their values, so here it is a hint: ``T.annotate_layout`` checks it and
records its kind in the function attribute ``tl.shared_layouts``; GPU targets that
swizzle shared tiles honour it (docs/gpu.md), the others ignore it. Register-fragment layouts for specific MMA
instructions are not supported and raise `UnsupportedError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tvm

from tl_ir import ops as _ops
from tl_ir.errors import KernelTypeError, UnsupportedError

__all__ = [
    "MemoryLayout",
    "make_full_bank_swizzled_layout",
    "make_fully_replicated_layout_fragment",
    "make_gemm_fragment_8x8",
    "make_gemm_fragment_8x8_transposed",
    "make_half_bank_swizzled_layout",
    "make_linear_layout",
    "make_quarter_bank_swizzled_layout",
    "make_swizzled_layout",
    "make_tcgen05mma_swizzled_layout",
    "make_volta_swizzled_layout",
    "make_wgmma_swizzled_layout",
]


@dataclass(frozen=True)
class MemoryLayout:
    """A shared-memory arrangement hint for one buffer.

    Attributes:
        buffer: the name of the buffer it was made for.
        kind: which arrangement TileLang would use (``swizzled``, ``full_bank``,
            ``linear``...).
    """

    buffer: str
    kind: str


def _buffer_name(buffer: Any, where: str) -> str:
    if isinstance(buffer, tvm.ir.TensorRegion | tvm.ir.TensorLoad):
        buffer = buffer.source
    if not _ops.is_buffer(buffer):
        raise KernelTypeError(
            f"{where}: expected a buffer (or a region or element of one), got {buffer!r}"
        )
    return str(buffer.name)


def make_swizzled_layout(buffer: Any, k_major: bool = True, allow_pad: bool = True) -> MemoryLayout:
    """TileLang's default swizzled shared-memory layout of ``buffer`` (a hint)."""
    return MemoryLayout(_buffer_name(buffer, "make_swizzled_layout(buffer)"), "swizzled")


def make_volta_swizzled_layout(
    buffer: Any, is_a: bool = True, k_inner: bool = True
) -> MemoryLayout:
    """The swizzled layout of Volta MMA operands (a hint)."""
    return MemoryLayout(_buffer_name(buffer, "make_volta_swizzled_layout(buffer)"), "volta")


def make_wgmma_swizzled_layout(
    buffer: Any, continuity: int | None = None, k_major: bool = True
) -> MemoryLayout:
    """The swizzled layout of Hopper WGMMA operands (a hint)."""
    return MemoryLayout(_buffer_name(buffer, "make_wgmma_swizzled_layout(buffer)"), "wgmma")


def make_tcgen05mma_swizzled_layout(
    buffer: Any, continuity: int | None = None, k_major: bool = True
) -> MemoryLayout:
    """The swizzled layout of Blackwell tcgen05 MMA operands (a hint)."""
    return MemoryLayout(_buffer_name(buffer, "make_tcgen05mma_swizzled_layout(buffer)"), "tcgen05")


def make_full_bank_swizzled_layout(buffer: Any) -> MemoryLayout:
    """A 128-byte swizzle of ``buffer`` (a hint)."""
    return MemoryLayout(_buffer_name(buffer, "make_full_bank_swizzled_layout(buffer)"), "full_bank")


def make_half_bank_swizzled_layout(buffer: Any) -> MemoryLayout:
    """A 64-byte swizzle of ``buffer`` (a hint)."""
    return MemoryLayout(_buffer_name(buffer, "make_half_bank_swizzled_layout(buffer)"), "half_bank")


def make_quarter_bank_swizzled_layout(buffer: Any) -> MemoryLayout:
    """A 32-byte swizzle of ``buffer`` (a hint)."""
    name = _buffer_name(buffer, "make_quarter_bank_swizzled_layout(buffer)")
    return MemoryLayout(name, "quarter_bank")


def make_linear_layout(buffer: Any) -> MemoryLayout:
    """The plain row-major layout of ``buffer`` (what every target uses unless told)."""
    return MemoryLayout(_buffer_name(buffer, "make_linear_layout(buffer)"), "linear")


def _fragment_unsupported(name: str) -> UnsupportedError:
    return UnsupportedError(
        f"{name}: register-fragment layouts of specific MMA instructions are not "
        "supported; fragments get their layout from the target's lowering"
    )


def make_gemm_fragment_8x8() -> Any:
    """Not supported: raises `UnsupportedError` (an mma.sync register fragment)."""
    raise _fragment_unsupported("make_gemm_fragment_8x8()")


def make_gemm_fragment_8x8_transposed() -> Any:
    """Not supported: raises `UnsupportedError` (an mma.sync register fragment)."""
    raise _fragment_unsupported("make_gemm_fragment_8x8_transposed()")


def make_fully_replicated_layout_fragment(buffer: Any, threads: int) -> Any:
    """Not supported: raises `UnsupportedError` (a register-fragment layout)."""
    raise _fragment_unsupported("make_fully_replicated_layout_fragment(buffer, threads)")
