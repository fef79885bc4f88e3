"""The data of fragment layouts: `FragmentLayout`, its kinds, and the small helpers
inference and lowering share (see `tl_passes.gpu.layout` for the kinds)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from tvm import tirx

from tl_ir.launch import LOOP_KIND_KEY
from tl_passes.gpu.warp_tiles import WarpTiles

#: Function attribute (name -> description) written by `GpuInferLayoutsPass`.
LAYOUTS_ATTR = "tl.gpu_fragment_layouts"
LAYOUT_MAP_ATTR = "tl.layout_map"

PARTITIONED = "partitioned"
REPLICATED = "replicated"
ANNOTATED = "annotated"
#: The accumulator layout of a matrix instruction (`WarpTiles`): a ``T.gemm`` on
#: tensor cores and the fragments that share its placement.
MMA = "mma"
#: The rows of an `MMA` placement: each thread holds the rows its accumulator
#: elements lie in (a row reduction's result).
ROWS = "rows"
#: Kinds whose elements are spread over the threads (each thread holds its own).
DISTRIBUTED_KINDS = (PARTITIONED, ANNOTATED, MMA, ROWS)


class LayoutError(ValueError):
    """A fragment cannot be given a layout the lowering supports."""


@dataclass(frozen=True)
class FragmentLayout:
    """Where the elements of one fragment live (see the module docstring).

    Attributes:
        name: the fragment's buffer name.
        shape: its static shape.
        num_threads: threads per block.
        kind: `PARTITIONED`, `REPLICATED`, `ANNOTATED`, `MMA` or `ROWS`.
        vector: consecutive elements per slot (partitioned).
        owners: per element (row-major), ``(thread, local)`` (annotated).
        tiles: the warp placement (`MMA`, `ROWS`).
    """

    name: str
    shape: tuple[int, ...]
    num_threads: int
    kind: str
    vector: int = 1
    owners: tuple[tuple[int, int], ...] = field(default=(), repr=False)
    index_map: Any = field(default=None, repr=False, compare=False)
    view_of: str | None = None
    tiles: WarpTiles | None = None

    @property
    def numel(self) -> int:
        """Elements of the tile."""
        return math.prod(self.shape)

    @property
    def local_size(self) -> int:
        """Elements each thread holds (padded: some threads may hold fewer)."""
        if self.kind == REPLICATED:
            return self.numel
        if self.kind == ANNOTATED:
            return max(local for _, local in self.owners) + 1
        if self.kind == MMA:
            assert self.tiles is not None
            return self.tiles.local_size
        if self.kind == ROWS:
            assert self.tiles is not None
            return self.tiles.row_slots
        slots = self.numel // self.vector
        return -(-slots // self.num_threads) * self.vector

    @property
    def exact(self) -> bool:
        """Every thread holds exactly `local_size` elements (partitioned, MMA, ROWS)."""
        if self.kind in (MMA, ROWS):
            return True
        return self.numel % (self.num_threads * self.vector) == 0

    def element_of(self, thread: Any, local: Any) -> tuple[Any, Any | None]:
        """Partitioned only: the flat element a thread holds at ``local``, and the
        condition that it exists (None when it always does)."""
        v, t = self.vector, self.num_threads
        slot = (local // v) * t + thread if v > 1 else local * t + thread
        flat = slot * v + local % v if v > 1 else slot
        valid = None if self.exact else slot < self.numel // v
        return flat, valid

    def index_of(self, thread: Any, local: Any) -> tuple[list[Any], Any | None]:
        """Partitioned, `MMA` or `ROWS`: the tile index ``thread`` holds at ``local`` and
        the condition that it exists (None: always)."""
        if self.kind == MMA:
            assert self.tiles is not None
            return list(self.tiles.element(thread, _int_or_expr(local))), None
        if self.kind == ROWS:
            assert self.tiles is not None
            return [self.tiles.row_of(thread, _int_or_expr(local))], None
        flat, valid = self.element_of(thread, local)
        return _unflatten(flat, self.shape), valid

    @property
    def unrolled(self) -> bool:
        """Whether per-thread loops over it are unrolled at compile time, whatever their
        length (an `MMA` or `ROWS` fragment is indexed by constants only, so its
        registers stay registers)."""
        return self.kind in (MMA, ROWS)

    def describe(self) -> str:
        """One line for IR dumps and tests: ``kind vector=v local=n`` (plus ``view of
        NAME`` for a view)."""
        line = f"{self.kind} vector={self.vector} local={self.local_size}"
        if self.tiles is not None:
            t = self.tiles
            line += f" warps={t.warps_m}x{t.warps_n} tiles={t.tiles_m}x{t.tiles_n}"
        return line if self.view_of is None else f"{line} view of {self.view_of}"


def default_vector(shape: tuple[int, ...], num_threads: int) -> int:
    """The slot width of the default layout (see the module docstring)."""
    numel = math.prod(shape)
    inner = shape[-1] if shape else 1
    for width in (4, 2, 1):
        if inner % width == 0 and numel % (num_threads * width) == 0:
            return width
    for width in (4, 2, 1):
        if inner % width == 0:
            return width
    return 1


def static_shape(buffer: Any) -> tuple[int, ...]:
    """The buffer's shape as ints.

    Raises:
        LayoutError: a dim is symbolic.
    """
    dims = []
    for extent in buffer.shape:
        if not isinstance(extent, tirx.IntImm):
            raise LayoutError(
                f"fragment {buffer.name}: expected a static shape on GPU targets, "
                f"got {list(buffer.shape)}"
            )
        dims.append(int(extent))
    return tuple(dims)


def loop_kind_of(loop: Any) -> str:
    """The ``tl.loop_kind`` annotation of a For ('' when absent)."""
    annotations = loop.annotations
    if annotations is not None and LOOP_KIND_KEY in annotations:
        return str(annotations[LOOP_KIND_KEY])
    return ""


def parallel_nest(loop: Any) -> tuple[list[Any], list[int], Any]:
    """The perfect nest of ``T.Parallel`` loops starting at ``loop``.

    Returns:
        (loop vars, static extents, innermost body).

    Raises:
        LayoutError: an extent of the nest is not a constant.
    """
    loop_vars: list[Any] = []
    extents: list[int] = []
    current = loop
    while isinstance(current, tirx.For) and loop_kind_of(current) == "parallel":
        if not isinstance(current.extent, tirx.IntImm):
            raise LayoutError(
                f"T.Parallel over {current.loop_var}: expected a constant extent on GPU "
                f"targets, got {current.extent}"
            )
        loop_vars.append(current.loop_var)
        extents.append(int(current.extent))
        current = current.body
    return loop_vars, extents, current


def is_buffer_load(value: Any) -> bool:
    """Whether ``value`` is a buffer load expression."""
    return type(value).__name__ == "TensorLoad"


def same_placement(a: FragmentLayout, b: FragmentLayout) -> bool:
    """Whether two layouts put every element on the same thread at the same local index."""
    return (a.kind, a.shape, a.num_threads, a.vector, a.owners, a.tiles) == (
        b.kind,
        b.shape,
        b.num_threads,
        b.vector,
        b.owners,
        b.tiles,
    )


def _int_or_expr(value: Any) -> Any:
    return int(value.value) if isinstance(value, tirx.IntImm) else value


def _unflatten(flat: Any, extents: tuple[int, ...]) -> list[Any]:
    index: list[Any] = []
    for d, extent in enumerate(extents):
        if extent == 1:
            index.append(tirx.IntImm("int32", 0))
            continue
        stride = math.prod(extents[d + 1 :])
        value = flat // stride if stride > 1 else flat
        index.append(value % extent if d > 0 else value)
    return index
