"""Which fragments take a matrix instruction's accumulator layout (`MMA`) or its rows
(`ROWS`), decided before the rest of layout inference.

* The C fragment of a ``T.gemm`` that a `MatrixInstruction` of the target can run
  (operand and accumulator dtypes, shape divisible by the instruction and the warp
  split its ``GemmWarpPolicy`` gives, B in shared memory, A in shared memory or a
  fragment usable as register A) proposes an `MMA` placement.
* Fragments of one shape that a full ``T.copy`` or an aligned ``T.Parallel`` nest
  connects form a group and share one placement; a group with two different
  proposals keeps the default layouts.
* The A fragment of such a gemm (flash attention's P) proposes the accumulator
  placement with every warp on rows (``warps_n == 1``) when the instruction's A
  registers are then elements the same lane already holds (two adjacent
  accumulator tiles form one A tile for the 16-bit m16n8k16 form).
* The 1-D destination of a row reduction (``dim=1``) of an `MMA` fragment
  proposes that fragment's `ROWS`.

`infer_fragment_layouts` then runs its usual rules; a planned fragment that still
has to be replicated drops its whole group (and the plan is made again without
it), so a use the tensor-core layouts do not fit falls back to the default layouts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tl_ir import scopes
from tl_passes.gpu.layout_base import MMA, ROWS, FragmentLayout, static_shape
from tl_passes.gpu.matrix import MatrixInstruction
from tl_passes.gpu.traits import GpuTraits
from tl_passes.gpu.warp_tiles import WarpTiles, accumulator_tiles, warp_partition


@dataclass
class NestInfo:
    """What one ``T.Parallel`` nest does with fragments (names).

    Attributes:
        extents: the nest's extents.
        aligned: fragments indexed exactly by the loop variables.
        misaligned: fragments indexed otherwise.
        written: fragments stored to.
        row_reads: fragments only read, at ``[first loop variable]``, in a nest of
            two or more loops.
        has_tile_op: the body holds a tile op (an atomic).
    """

    extents: list[int]
    aligned: set[str] = field(default_factory=set)
    misaligned: set[str] = field(default_factory=set)
    written: set[str] = field(default_factory=set)
    row_reads: set[str] = field(default_factory=set)
    has_tile_op: bool = False


@dataclass
class TensorCorePlan:
    """The planned layouts (name -> `FragmentLayout`) and each planned name's group."""

    layouts: dict[str, FragmentLayout] = field(default_factory=dict)
    groups: dict[str, str] = field(default_factory=dict)
    #: Fragments placed to feed a planned gemm's instruction as its A registers.
    register_a: set[str] = field(default_factory=set)

    def exempt_row_reads(self, nest: NestInfo) -> set[str]:
        """The misaligned accesses of ``nest`` that are row reads of a `ROWS` fragment
        by a nest an `MMA` fragment with the same rows drives."""
        drivers = [self.layouts[n] for n in nest.aligned if n in self.layouts]
        out = set()
        for name in nest.row_reads:
            layout = self.layouts.get(name)
            if layout is None or layout.kind != ROWS or name in nest.written:
                continue
            assert layout.tiles is not None
            for driver in drivers:
                assert driver.tiles is not None
                if (
                    driver.kind == MMA
                    and driver.tiles.same_rows(layout.tiles)
                    and driver.shape[0] == layout.shape[0]
                ):
                    out.add(name)
        return out


class _Groups:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, name: str) -> str:
        self.parent.setdefault(name, name)
        while self.parent[name] != name:
            self.parent[name] = self.parent[self.parent[name]]
            name = self.parent[name]
        return name

    def union(self, a: str, b: str) -> None:
        self.parent[self.find(a)] = self.find(b)


@dataclass
class GemmCandidate:
    """A ``T.gemm`` a matrix instruction can run, with its accumulator placement."""

    op: Any
    instruction: MatrixInstruction
    tiles: WarpTiles


def gemm_candidate(
    op: Any,
    fragments: dict[str, Any],
    num_threads: int,
    warp_size: int,
    traits: GpuTraits,
    target: Any | None,
) -> GemmCandidate | None:
    """The matrix instruction and accumulator placement of the ``T.gemm`` ``op``, or
    None when it stays an FMA loop (module docstring)."""
    from tl_passes.gpu.tir_build import const_int

    m, n, k = const_int(op.M), const_int(op.N), const_int(op.K)
    if m is None or n is None or k is None or warp_size < 2 or num_threads % warp_size:
        return None
    a, b, c = op.a.buffer, op.b.buffer, op.c.buffer
    if str(c.name) not in fragments or not c.same_as(fragments[str(c.name)]):
        return None
    if not op.c.is_full or len(c.shape) != 2 or static_shape(c) != (m, n):
        return None
    instruction = traits.matrix_instruction(
        str(a.ty.dtype), str(b.ty.dtype), str(c.ty.dtype), target
    )
    if instruction is None or instruction.lanes != warp_size or k % instruction.k:
        return None
    if str(b.ty.storage_scope) not in scopes.SHARED_SCOPES:
        return None
    a_scope = str(a.ty.storage_scope)
    if a_scope not in scopes.SHARED_SCOPES and str(a.name) not in fragments:
        return None
    for region in (op.a, op.b):
        extents = [const_int(e) for e in region.extents]
        if any(e is None for e in extents) or len(extents) < 2 or any(e != 1 for e in extents[:-2]):
            return None
    warps = warp_partition(op.policy, m, n, num_threads // warp_size, instruction.m, instruction.n)
    if warps is None:
        return None
    return GemmCandidate(op, instruction, accumulator_tiles(instruction, m, n, warps, warp_size))


def register_a_tiles(candidate: GemmCandidate) -> WarpTiles | None:
    """The placement an A fragment needs to feed ``candidate``'s instruction from
    registers, or None when no placement does (the C warps split N, A is
    transposed, or the instruction's A registers are not elements the lane holds in
    the accumulator placement of an M x K fragment)."""
    op, instruction, tiles = candidate.op, candidate.instruction, candidate.tiles
    if tiles.warps_n != 1 or op.transpose_a:
        return None
    k = int(op.K)
    a_tiles = WarpTiles(
        rows=tiles.rows,
        cols=k,
        warps_m=tiles.warps_m,
        warps_n=1,
        tile_m=tiles.tile_m,
        tile_n=tiles.tile_n,
        per_tile=tiles.per_tile,
        c_map=tiles.c_map,
        map_key=tiles.map_key,
        warp_size=tiles.warp_size,
    )
    if k % a_tiles.tile_n or register_a_locals(instruction, a_tiles) is None:
        return None
    return a_tiles


def register_a_locals(
    instruction: MatrixInstruction, a_tiles: WarpTiles
) -> dict[tuple[int, int], int] | None:
    """(m tile, k step) -> the first local index of the A registers of that tile in an
    A fragment placed as ``a_tiles``, when every lane finds its instruction A elements
    at consecutive local indices of its own (None otherwise)."""
    owners: dict[tuple[int, int], tuple[int, int]] = {}
    for lane in range(a_tiles.warp_size):
        for local in range(a_tiles.local_size):
            owners[a_tiles.element(lane, local)] = (lane, local)
    bases: dict[tuple[int, int], int] = {}
    for mi in range(a_tiles.tiles_m):
        for kk in range(a_tiles.cols // instruction.k):
            base = None
            for lane in range(instruction.lanes):
                for e in range(instruction.a_elements):
                    r, c = instruction.a_map(lane, e)
                    holder = owners.get((mi * instruction.m + r, kk * instruction.k + c))
                    if holder is None or holder[0] != lane:
                        return None
                    start = holder[1] - e
                    if base is None:
                        base = start
                    if start != base:
                        return None
            assert base is not None
            bases[(mi, kk)] = base
    return bases


def plan_tensor_cores(
    ops: list[Any],
    nests: list[NestInfo],
    candidates_names: dict[str, Any],
    num_threads: int,
    warp_size: int,
    traits: GpuTraits,
    target: Any | None,
) -> TensorCorePlan:
    """The tensor-core layouts of the fragments in ``candidates_names`` (name -> buffer:
    fragments that are no views, have no views and carry no annotation)."""
    from tl_ir import ops as tile

    plan = TensorCorePlan()
    if not traits.matrix_instructions or not candidates_names:
        return plan
    groups = _Groups()

    def full_fragment(region: Any) -> str | None:
        name = str(region.buffer.name)
        buffer = candidates_names.get(name)
        if buffer is None or not region.buffer.same_as(buffer) or not region.is_full:
            return None
        return name

    for op in ops:
        if isinstance(op, tile.CopyOp):
            src, dst = full_fragment(op.src), full_fragment(op.dst)
            if src and dst and static_shape(op.src.buffer) == static_shape(op.dst.buffer):
                groups.union(src, dst)
    for nest in nests:
        aligned = sorted(n for n in nest.aligned if n in candidates_names)
        for other in aligned[1:]:
            groups.union(aligned[0], other)

    proposals: dict[str, list[tuple[str, WarpTiles]]] = {}

    def propose(name: str, kind: str, tiles: WarpTiles) -> None:
        proposals.setdefault(groups.find(name), []).append((kind, tiles))

    def resolved(name: str) -> tuple[str, WarpTiles] | None:
        found = proposals.get(groups.find(name), [])
        if not found or any(p != found[0] for p in found[1:]):
            return None
        return found[0]

    gemms = []
    for op in ops:
        if isinstance(op, tile.GemmOp) and full_fragment(op.c):
            candidate = gemm_candidate(op, candidates_names, num_threads, warp_size, traits, target)
            if candidate is not None:
                gemms.append(candidate)
                propose(str(op.c.buffer.name), MMA, candidate.tiles)
    for candidate in gemms:
        a_name = full_fragment(candidate.op.a)
        c_resolved = resolved(str(candidate.op.c.buffer.name))
        if a_name is None or c_resolved is None or c_resolved[1] != candidate.tiles:
            continue
        a_tiles = register_a_tiles(candidate)
        if proposals.get(groups.find(a_name)) and resolved(a_name) != (MMA, a_tiles):
            continue
        if a_tiles is not None and static_shape(candidate.op.a.buffer) == (
            a_tiles.rows,
            a_tiles.cols,
        ):
            propose(a_name, MMA, a_tiles)
    for op in ops:
        if not isinstance(op, tile.ReduceOp) or op.dim != 1:
            continue
        src, dst = full_fragment(op.src), full_fragment(op.dst)
        if src is None or dst is None or len(static_shape(op.src.buffer)) != 2:
            continue
        source = resolved(src)
        if source is None or source[0] != MMA:
            continue
        tiles = source[1]
        if static_shape(op.dst.buffer) != (tiles.rows,):
            continue
        propose(dst, ROWS, _row_tiles(tiles))

    for name, buffer in candidates_names.items():
        choice = resolved(name)
        if choice is None:
            continue
        kind, tiles = choice
        shape = static_shape(buffer)
        expected = (tiles.rows,) if kind == ROWS else (tiles.rows, tiles.cols)
        if shape != expected:
            continue
        plan.layouts[name] = FragmentLayout(name, shape, num_threads, kind, tiles=tiles)
        plan.groups[name] = groups.find(name)
    for candidate in gemms:
        a_name = full_fragment(candidate.op.a)
        c_layout = plan.layouts.get(str(candidate.op.c.buffer.name))
        if a_name is None or a_name not in plan.layouts or c_layout is None:
            continue
        if c_layout.tiles == candidate.tiles and plan.layouts[a_name].tiles == register_a_tiles(
            candidate
        ):
            plan.register_a.add(a_name)
    return plan


def _row_tiles(tiles: WarpTiles) -> WarpTiles:
    """``tiles`` with one tile column per warp: a `ROWS` placement depends on the rows
    and the warp grid only."""
    return WarpTiles(
        rows=tiles.rows,
        cols=tiles.warps_n * tiles.tile_n,
        warps_m=tiles.warps_m,
        warps_n=tiles.warps_n,
        tile_m=tiles.tile_m,
        tile_n=tiles.tile_n,
        per_tile=tiles.per_tile,
        c_map=tiles.c_map,
        map_key=tiles.map_key,
        warp_size=tiles.warp_size,
    )
