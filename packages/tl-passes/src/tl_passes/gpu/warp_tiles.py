"""`WarpTiles`: how a matrix-instruction accumulator is spread over a block's warps.

The block's warps form a ``warps_m x warps_n`` grid over the ``rows x cols``
fragment (warp ``w`` at grid position ``(w // warps_n, w % warps_n)``); each
warp holds a ``(rows / warps_m) x (cols / warps_n)`` sub-tile made of
``tiles_m x tiles_n`` instruction accumulator tiles of ``tile_m x tile_n``, and
inside a tile lane ``lane`` holds element ``e`` at the instruction's fragment
map ``c_map(lane, e)``. A thread's local index ``(mi * tiles_n + ni) * per_tile
+ e`` names tile ``(mi, ni)``, element ``e``: every element is on exactly one
thread at one constant local index, nothing is replicated.

The *rows* of such a placement (`row_slots`) are what a row reduction leaves
each thread: the rows its elements lie in, ``tiles_m * len(row_offsets)`` of
them, at local index ``mi * len(row_offsets) + slot``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tl_passes.gpu.matrix import FragmentMap, MatrixInstruction

#: ``GemmWarpPolicy`` values (tl_ir's enum): balanced, all warps on rows, all on columns.
SQUARE, FULL_ROW, FULL_COL = 0, 1, 2


@dataclass(frozen=True)
class WarpTiles:
    """The placement of one accumulator-layout fragment (module docstring).

    Attributes:
        rows, cols: the fragment's shape.
        warps_m, warps_n: the warp grid.
        tile_m, tile_n: one instruction accumulator tile.
        per_tile: elements of a tile each lane holds.
        c_map: the instruction's accumulator fragment map.
        warp_size: lanes per warp.
    """

    rows: int
    cols: int
    warps_m: int
    warps_n: int
    tile_m: int
    tile_n: int
    per_tile: int
    c_map: FragmentMap = field(compare=False, repr=False)
    map_key: str = ""
    warp_size: int = 32

    @property
    def tiles_m(self) -> int:
        """Tiles per warp along rows."""
        return self.rows // self.warps_m // self.tile_m

    @property
    def tiles_n(self) -> int:
        """Tiles per warp along columns."""
        return self.cols // self.warps_n // self.tile_n

    @property
    def local_size(self) -> int:
        """Elements each thread holds."""
        return self.tiles_m * self.tiles_n * self.per_tile

    def warp_origin(self, thread: Any) -> tuple[Any, Any]:
        """The (row, col) of the sub-tile of ``thread``'s warp."""
        warp = thread // self.warp_size
        return (
            (warp // self.warps_n) * (self.rows // self.warps_m),
            (warp % self.warps_n) * (self.cols // self.warps_n),
        )

    def split(self, local: Any) -> tuple[Any, Any, Any]:
        """``(mi, ni, e)`` of a local index (an int, or a TIR expression)."""
        tile, e = local // self.per_tile, local % self.per_tile
        return tile // self.tiles_n, tile % self.tiles_n, e

    def element(self, thread: Any, local: Any) -> tuple[Any, Any]:
        """The (row, col) ``thread`` holds at ``local`` (an int, or a TIR expression)."""
        mi, ni, e = self.split(local)
        row0, col0 = self.warp_origin(thread)
        r, c = self.c_map(thread % self.warp_size, e)
        return row0 + mi * self.tile_m + r, col0 + ni * self.tile_n + c

    # ---- rows ----------------------------------------------------------------
    @property
    def row_offsets(self) -> tuple[int, ...]:
        """Row offsets (from lane 0's first row) of the rows a lane holds in a tile."""
        rows = sorted({self.c_map(0, e)[0] for e in range(self.per_tile)})
        return tuple(r - rows[0] for r in rows)

    def row_slot(self, e: int) -> int:
        """Which of a lane's rows element ``e`` of a tile lies in."""
        base = self.c_map(0, 0)[0]
        return self.row_offsets.index(self.c_map(0, e)[0] - base)

    @property
    def row_slots(self) -> int:
        """Rows each thread holds after a row reduction."""
        return self.tiles_m * len(self.row_offsets)

    def row_local(self, local: Any) -> Any:
        """The row-layout local index of the row element ``local`` lies in (an int for
        an int ``local``, else a TIR expression)."""
        mi, _, e = self.split(local)
        slots = [self.row_slot(x) for x in range(self.per_tile)]
        return mi * len(self.row_offsets) + _pick(e, slots)

    def row_of(self, thread: Any, row_local: Any) -> Any:
        """The fragment row ``thread`` holds at row-layout local ``row_local`` (an int,
        or a TIR expression)."""
        count = len(self.row_offsets)
        mi, slot = row_local // count, row_local % count
        firsts = [
            next(e for e in range(self.per_tile) if self.row_slot(e) == s) for s in range(count)
        ]
        e = _pick(slot, firsts)
        row0, _ = self.warp_origin(thread)
        return row0 + mi * self.tile_m + self.c_map(thread % self.warp_size, e)[0]

    def row_lane_masks(self) -> tuple[int, ...]:
        """XOR lane offsets that visit every lane holding the same rows (in a warp).

        Raises:
            ValueError: the lanes sharing a row do not form an XOR group.
        """

        def rows_of(lane: int) -> frozenset[int]:
            return frozenset(self.c_map(lane, e)[0] for e in range(self.per_tile))

        sharing = [lane for lane in range(self.warp_size) if rows_of(lane) == rows_of(0)]
        masks = tuple(1 << b for b in range(self.warp_size.bit_length()) if (1 << b) in sharing)
        group = {0}
        for mask in masks:
            group |= {x ^ mask for x in group}
        if sorted(group) != sharing:
            raise ValueError("the lanes sharing an accumulator row do not form an XOR group")
        return masks

    def same_rows(self, other: WarpTiles) -> bool:
        """Whether both put the same rows on the same threads at the same row slots."""
        return (
            self.rows,
            self.warps_m,
            self.warps_n,
            self.tile_m,
            self.per_tile,
            self.map_key,
            self.warp_size,
            self.row_offsets,
        ) == (
            other.rows,
            other.warps_m,
            other.warps_n,
            other.tile_m,
            other.per_tile,
            other.map_key,
            other.warp_size,
            other.row_offsets,
        ) and all(self.row_slot(e) == other.row_slot(e) for e in range(self.per_tile))


def _pick(selector: Any, values: list[int]) -> Any:
    """``values[selector]``: a list index for an int, a chain of selects in TIR."""
    if isinstance(selector, int):
        return values[selector]
    from tvm import tirx

    expr: Any = tirx.IntImm("int32", values[-1])
    for position in range(len(values) - 2, -1, -1):
        if values[position] != values[-1] or position == 0:
            expr = tirx.Select(selector == position, tirx.IntImm("int32", values[position]), expr)
    return expr


def warp_partition(
    policy: int, rows: int, cols: int, warps: int, tile_m: int, tile_n: int
) -> tuple[int, int] | None:
    """``(warps_m, warps_n)`` for ``warps`` warps over a ``rows x cols`` accumulator of
    ``tile_m x tile_n`` instruction tiles, as the ``GemmWarpPolicy`` ``policy`` says:
    FullRow puts every warp on rows, FullCol on columns, Square picks the split whose
    per-warp sub-tile is closest to square (more warps on rows on a tie). None when
    the tiles do not divide evenly."""
    candidates = [(wm, warps // wm) for wm in range(1, warps + 1) if warps % wm == 0]
    if policy == FULL_ROW:
        candidates = [(warps, 1)]
    elif policy == FULL_COL:
        candidates = [(1, warps)]
    fitting = [
        (wm, wn) for wm, wn in candidates if rows % (wm * tile_m) == 0 and cols % (wn * tile_n) == 0
    ]
    if not fitting:
        return None
    return min(fitting, key=lambda p: (abs(rows / p[0] - cols / p[1]), -p[0]))


def accumulator_tiles(
    instruction: MatrixInstruction, rows: int, cols: int, warps: tuple[int, int], warp_size: int
) -> WarpTiles:
    """The `WarpTiles` of an accumulator of ``instruction`` split over ``warps``."""
    return WarpTiles(
        rows=rows,
        cols=cols,
        warps_m=warps[0],
        warps_n=warps[1],
        tile_m=instruction.m,
        tile_n=instruction.n,
        per_tile=instruction.c_elements,
        c_map=instruction.c_map,
        map_key=_map_key(instruction),
        warp_size=warp_size,
    )


def _map_key(instruction: MatrixInstruction) -> str:
    """Identifies the accumulator map by its values (instructions sharing one compare equal)."""
    cells = (
        instruction.c_map(lane, e)
        for lane in range(instruction.lanes)
        for e in range(instruction.c_elements)
    )
    return f"{instruction.m}x{instruction.n}:" + ",".join(f"{r}.{c}" for r, c in cells)
