"""`Operand`: one tile operand of a tile op, as the GPU lowering addresses it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tvm import tirx

from tl_ir import scopes
from tl_ir.run_time_tiles import run_time_extent_error
from tl_passes.gpu.errors import GpuLoweringError
from tl_passes.gpu.layout_base import DISTRIBUTED_KINDS
from tl_passes.gpu.tir_build import both, cast, const_int, int_imm

if TYPE_CHECKING:
    from tl_passes.gpu.kernel import KernelLowering

#: Storage scopes of block-shared tiles.


class Operand:
    """A tile operand (a `tl_ir.ops.Region`) with its place in the lowered kernel."""

    def __init__(self, region: Any, lowering: KernelLowering) -> None:
        self.region = region
        self.buffer = region.buffer
        self.name = str(self.buffer.name)
        self.scope = scopes.buffer_scope(self.buffer)
        self.extents: list[int] = []
        for extent in region.extents:
            value = const_int(extent)
            if value is None:
                refusal = run_time_extent_error(None, self.name, extent)
                raise GpuLoweringError(refusal.message)
            self.extents.append(value)
        self.layout = lowering.layouts.get(self.name) if self.scope == scopes.FRAGMENT else None
        self.local_buffer = lowering.local_buffers.get(self.name)
        self.lowering = lowering

    @property
    def dtype(self) -> str:
        return str(self.buffer.ty.dtype)

    @property
    def partitioned(self) -> bool:
        return self.layout is not None and self.layout.kind in DISTRIBUTED_KINDS

    @property
    def per_thread(self) -> bool:
        """Every thread holds all of it (replicated fragment or local array)."""
        if self.layout is not None:
            return not self.partitioned
        return self.scope in scopes.THREAD_PRIVATE_SCOPES

    @property
    def squeezed(self) -> list[int]:
        return [e for e in self.extents if e != 1]

    def full_index(self, tile_index: Sequence[Any]) -> list[Any]:
        """Buffer indices for a tile index over ALL dims of the region."""
        return [m + i for m, i in zip(self.region.mins, tile_index, strict=True)]

    def expand(self, squeezed_index: Sequence[Any]) -> list[Any]:
        """A per-dim tile index from an index over the non-unit dims."""
        out: list[Any] = []
        position = 0
        for extent in self.extents:
            if extent == 1:
                out.append(int_imm(0))
            else:
                out.append(squeezed_index[position])
                position += 1
        return out

    def inside(self, tile_index: Sequence[Any]) -> Any | None:
        """Condition that the element lies inside its buffer (None: always)."""
        if self.scope != scopes.GLOBAL and self.scope not in scopes.SHARED_SCOPES:
            return None
        condition = None
        for start, extent, size, i in zip(
            self.region.mins, self.extents, self.buffer.shape, tile_index, strict=True
        ):
            s, n = const_int(start), const_int(size)
            if s is not None and n is not None and s >= 0 and s + extent <= n:
                continue
            if s is None or s < 0:
                # an anchor below 0 (``X[by * 8 - 2, 0]``): rows before the buffer are
                # outside too (the simplifier drops the test where the anchor is provably
                # non-negative, as ``by * 8`` is)
                condition = both(condition, start + i >= 0)
            condition = both(condition, start + i < size)
        return condition

    def load(self, tile_index: Sequence[Any], local: Any | None = None) -> Any:
        if self.partitioned:
            if local is None:
                raise GpuLoweringError(
                    f"fragment {self.name}: read by threads that do not hold it; a layout "
                    "conversion through shared memory is not implemented"
                )
            return tirx.BufferLoad(self.local_buffer, [local])
        buffer = self.local_buffer if self.local_buffer is not None else self.buffer
        return tirx.BufferLoad(buffer, self.full_index(tile_index))

    def store(self, tile_index: Sequence[Any], value: Any, local: Any | None = None) -> Any:
        value = cast(value, self.dtype)
        if self.partitioned:
            if local is None:
                raise GpuLoweringError(
                    f"fragment {self.name}: written by threads that do not hold it; a layout "
                    "conversion through shared memory is not implemented"
                )
            return tirx.BufferStore(self.local_buffer, value, [local])
        buffer = self.local_buffer if self.local_buffer is not None else self.buffer
        return tirx.BufferStore(buffer, value, self.full_index(tile_index))
