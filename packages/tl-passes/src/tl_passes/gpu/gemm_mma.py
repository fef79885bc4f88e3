"""``T.gemm`` on a target's matrix instruction (tensor cores).

Taken when C has the `MMA` layout of the instruction that the target has for the
operand and accumulator dtypes, B is in shared memory and A is in shared memory
or is a fragment whose `MMA` placement holds the instruction's A registers
(`tensor_core_plan.register_a_locals`); otherwise `gemm.lower_gemm` keeps the FMA
loop. Per k-step of the instruction (unrolled at compile time) each warp loads
the A tiles of its rows and the B tiles of its columns into registers and issues
one instruction per ``(m tile, n tile)``, accumulating into C's registers in place.

Operands in shared memory are read with the target's `MatrixLoad` where the
instruction's fragment map makes a 32-bit register one row piece of an
8-row matrix: along the tile's contiguous dim the plain form, across it the
transposing form (16-bit elements); neighbouring registers go in one load of 4,
2 or 1 matrices. Other registers (8-bit operands not contiguous along K, rows
not aligned to the load's 16 bytes, or a target without a `MatrixLoad`) are
loaded element by element. Every shared address is the element's buffer index
(``address_of(A_shared[..., row, col])``, `shared_address`), so the swizzle of
`gpu-swizzle-shared` applies to the reads unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import tvm
from tvm import tirx

from tl_ir import scopes
from tl_passes.gpu.layout_base import MMA
from tl_passes.gpu.matrix import FragmentMap, MatrixInstruction
from tl_passes.gpu.operand import Operand
from tl_passes.gpu.tensor_core_plan import register_a_locals
from tl_passes.gpu.tir_build import const_int, int_imm, seq
from tl_passes.gpu.warp_tiles import WarpTiles, accumulator_tiles

if TYPE_CHECKING:
    from tl_passes.gpu.kernel import KernelLowering


@dataclass(frozen=True)
class _Word:
    """One 32-bit operand register of a k-step: where it goes and how it is loaded."""

    index: int  # 32-bit register index in the operand's register array
    base: tuple[int, int]  # operand coordinates of lane 0's first element, in the warp tile
    mode: str  # "plain" (matrix load), "trans" (transposing load) or "scalar"


def mma_gemm(kernel: KernelLowering, op: Any) -> Any | None:
    """The per-thread code of ``op`` on the target's matrix instruction, or None when it
    keeps the FMA loop (module docstring)."""
    a, b, c = Operand(op.a, kernel), Operand(op.b, kernel), Operand(op.c, kernel)
    if c.layout is None or c.layout.kind != MMA or c.layout.tiles is None:
        return None
    instruction = kernel.traits.matrix_instruction(a.dtype, b.dtype, c.dtype, kernel.target)
    m, n, k = const_int(op.M), const_int(op.N), const_int(op.K)
    if instruction is None or m is None or n is None or k is None or k % instruction.k:
        return None
    tiles = c.layout.tiles
    warps = (tiles.warps_m, tiles.warps_n)
    if accumulator_tiles(instruction, m, n, warps, tiles.warp_size) != tiles:
        return None
    if b.scope not in scopes.SHARED_SCOPES:
        return None
    register_bases = None
    if a.scope not in scopes.SHARED_SCOPES:
        if a.layout is None or a.layout.kind != MMA or a.layout.tiles is None or op.transpose_a:
            return None
        a_tiles = a.layout.tiles
        if (a_tiles.rows, a_tiles.warps_m, a_tiles.warps_n, tiles.warps_n) != (
            m,
            tiles.warps_m,
            1,
            1,
        ):
            return None
        register_bases = register_a_locals(instruction, a_tiles)
        if register_bases is None:
            return None
    return _MmaGemm(kernel, op, instruction, tiles, a, b, c, register_bases).lower()


class _MmaGemm:
    def __init__(
        self,
        kernel: KernelLowering,
        op: Any,
        instruction: MatrixInstruction,
        tiles: WarpTiles,
        a: Operand,
        b: Operand,
        c: Operand,
        register_bases: dict[tuple[int, int], int] | None,
    ) -> None:
        self.kernel, self.op, self.instruction, self.tiles = kernel, op, instruction, tiles
        self.a, self.b, self.c = a, b, c
        self.register_bases = register_bases
        self.lane = kernel.tid % tiles.warp_size
        self.row0, self.col0 = tiles.warp_origin(kernel.tid)

    def lower(self) -> Any:
        inst, tiles = self.instruction, self.tiles
        c_regs = self.kernel.local_buffers[self.c.name]
        stmts: list[Any] = []
        if self.op.clear_accum:
            zero = tirx.const(0, self.c.dtype)
            stmts += [tirx.BufferStore(c_regs, zero, [int_imm(i)]) for i in range(tiles.local_size)]
        a_regs = None
        if self.register_bases is None:
            a_regs = self.kernel.local_array(
                "a_frag", [tiles.tiles_m * inst.a_elements], self.a.dtype
            )
        b_regs = self.kernel.local_array("b_frag", [tiles.tiles_n * inst.b_elements], self.b.dtype)
        for kk in range(int(self.op.K) // inst.k):
            if a_regs is not None:
                stmts += self._load_operand(self.a, a_regs, kk, is_a=True)
            stmts += self._load_operand(self.b, b_regs, kk, is_a=False)
            for mi in range(tiles.tiles_m):
                if a_regs is not None:
                    a_address = _address(a_regs, mi * inst.a_elements, inst.a_elements)
                else:
                    assert self.register_bases is not None
                    a_local = self.kernel.local_buffers[self.a.name]
                    a_address = _address(a_local, self.register_bases[(mi, kk)], inst.a_elements)
                for ni in range(tiles.tiles_n):
                    c_address = _address(
                        c_regs, (mi * tiles.tiles_n + ni) * tiles.per_tile, tiles.per_tile
                    )
                    b_address = _address(b_regs, ni * inst.b_elements, inst.b_elements)
                    call = tirx.call_extern("void", inst.function, c_address, a_address, b_address)
                    stmts.append(tirx.Evaluate(call))
        allocs = [tirx.AllocBuffer(b_regs)]
        if a_regs is not None:
            allocs.insert(0, tirx.AllocBuffer(a_regs))
        return seq([*allocs, *stmts])

    # ---- operand loads ---------------------------------------------------------
    def _load_operand(self, operand: Operand, regs: Any, kk: int, is_a: bool) -> list[Any]:
        inst, tiles = self.instruction, self.tiles
        fragment: FragmentMap = inst.a_map if is_a else inst.b_map
        elements = inst.a_elements if is_a else inst.b_elements
        count = tiles.tiles_m if is_a else tiles.tiles_n
        transposed = bool(self.op.transpose_a if is_a else self.op.transpose_b)
        contiguous = 0 if transposed else 1  # operand dim that is contiguous in memory
        bits = int(tvm.DataType(operand.dtype).bits)
        per_word = 32 // bits
        words: list[_Word] = []
        for t in range(count):
            origin = (t * inst.m, kk * inst.k) if is_a else (kk * inst.k, t * inst.n)
            for w in range(elements // per_word):
                run = _word_run(fragment, w * per_word, per_word, inst.lanes)
                base = fragment(0, w * per_word)
                base = (origin[0] + base[0], origin[1] + base[1])
                mode = "scalar"
                if run is not None and self._loadable(operand, contiguous, bits, is_a):
                    if run == contiguous:
                        mode = "plain"
                    elif self._transposable(bits):
                        mode = "trans"
                words.append(_Word(t * (elements // per_word) + w, base, mode))
        stmts: list[Any] = []
        position = 0
        while position < len(words):
            word = words[position]
            if word.mode == "scalar":
                stmts += self._scalar_loads(
                    operand, regs, word, fragment, per_word, is_a, transposed
                )
                position += 1
                continue
            size = 1
            while (
                size < 4
                and position + size < len(words)
                and words[position + size].mode == word.mode
                and words[position + size].index == word.index + size
            ):
                size += 1
            size = 4 if size == 4 else 2 if size >= 2 else 1
            group = words[position : position + size]
            stmts.append(
                self._matrix_load(operand, regs, group, contiguous, per_word, is_a, transposed)
            )
            position += size
        return stmts

    def _transposable(self, bits: int) -> bool:
        load = self.kernel.traits.matrix_load
        return load is not None and bits == load.transposed_element_bits

    def _loadable(self, operand: Operand, contiguous: int, bits: int, is_a: bool) -> bool:
        """Whether every matrix row a matrix load would read starts on its
        ``row_bytes`` boundary (tile offsets, warp origins, buffer rows, region start)."""
        load = self.kernel.traits.matrix_load
        if load is None or load.rows != 8 or self.instruction.lanes != 32:
            return False
        step = load.row_bytes * 8 // bits  # elements per row piece
        inst, tiles = self.instruction, self.tiles
        if is_a:
            spans = ((inst.m, tiles.rows // tiles.warps_m), (inst.k, inst.k))
        else:
            spans = ((inst.k, inst.k), (inst.n, tiles.cols // tiles.warps_n))
        if any(s % step for s in spans[contiguous]):
            return False
        size = const_int(operand.buffer.shape[-1])
        if size is None or size % step:
            return False
        start = tvm.sym.Analyzer().simplify(tirx.floormod(operand.region.mins[-1], step))
        return const_int(start) == 0

    def _buffer_index(
        self, operand: Operand, coords: tuple[Any, Any], transposed: bool, is_a: bool
    ) -> list[Any]:
        d0, d1 = coords
        if is_a:
            d0, d1 = self.row0 + d0, d1
        else:
            d0, d1 = d0, self.col0 + d1
        pair = [d1, d0] if transposed else [d0, d1]
        tile_index = [int_imm(0)] * (len(operand.extents) - 2) + pair
        return operand.full_index(tile_index)

    def _scalar_loads(
        self,
        operand: Operand,
        regs: Any,
        word: _Word,
        fragment: FragmentMap,
        per_word: int,
        is_a: bool,
        transposed: bool,
    ) -> list[Any]:
        inst = self.instruction
        elements = inst.a_elements if is_a else inst.b_elements
        words_per_tile = elements // per_word
        tile, w = divmod(word.index, words_per_tile)
        stmts = []
        for j in range(per_word):
            e = w * per_word + j
            r, col = fragment(self.lane, e)
            r = word.base[0] - fragment(0, w * per_word)[0] + r
            col = word.base[1] - fragment(0, w * per_word)[1] + col
            index = self._buffer_index(operand, (r, col), transposed, is_a)
            value = tirx.BufferLoad(operand.buffer, index)
            stmts.append(tirx.BufferStore(regs, value, [int_imm(tile * elements + e)]))
        return stmts

    def _matrix_load(
        self,
        operand: Operand,
        regs: Any,
        group: list[_Word],
        contiguous: int,
        per_word: int,
        is_a: bool,
        transposed: bool,
    ) -> Any:
        load = self.kernel.traits.matrix_load
        assert load is not None
        size = len(group)
        names = load.functions if group[0].mode == "plain" else load.transposed_functions
        if size not in names:
            raise AssertionError(f"matrix load of {size} matrices not declared")
        noncontiguous = 1 - contiguous
        matrix = (self.lane // load.rows) % size
        row = self.lane % load.rows
        coords: list[Any] = []
        for dim in (0, 1):
            bases = [word.base[dim] for word in group]
            value = _select_by(matrix, bases)
            coords.append(value + row if dim == noncontiguous else value)
        index = self._buffer_index(operand, (coords[0], coords[1]), transposed, is_a)
        address = shared_address(operand.buffer, index)
        destination = _address(regs, group[0].index * per_word, len(group) * per_word)
        return tirx.Evaluate(tirx.call_extern("void", names[size], destination, address))


def _word_run(fragment: FragmentMap, first: int, per_word: int, lanes: int) -> int | None:
    """The operand dim a 32-bit register's elements run along when the register is one
    row piece of an 8-row matrix (lane ``l`` at row ``l // 4``, bytes ``4 * (l % 4)``),
    or None."""
    base = fragment(0, first)
    for run in (0, 1):
        fits = True
        for lane in range(lanes):
            for j in range(per_word):
                along = base[run] + (lane % 4) * per_word + j
                across = base[1 - run] + lane // 4
                expected = (along, across) if run == 0 else (across, along)
                if fragment(lane, first + j) != expected:
                    fits = False
                    break
            if not fits:
                break
        if fits:
            return run
    return None


def _select_by(selector: Any, values: list[int]) -> Any:
    """``values[selector]`` as TIR: affine in the selector's bits when it can be, else a
    chain of selects."""
    if all(v == values[0] for v in values):
        return int_imm(values[0])
    if len(values) == 2:
        return int_imm(values[0]) + selector * (values[1] - values[0])
    if len(values) == 4 and values[3] - values[2] == values[1] - values[0]:
        low, high = values[1] - values[0], values[2] - values[0]
        return int_imm(values[0]) + (selector % 2) * low + (selector // 2) * high
    expr: Any = int_imm(values[-1])
    for position in range(len(values) - 2, -1, -1):
        expr = tirx.Select(selector == position, int_imm(values[position]), expr)
    return expr


def shared_address(buffer: Any, index: list[Any]) -> Any:
    """The row address of element ``index`` of the shared ``buffer`` for a matrix load:
    ``address_of(buffer[index])``, so index remapping (the swizzle) applies to it;
    `gpu-matrix-load-addresses` turns it into an access pointer at the end."""
    return tirx.address_of(tirx.BufferLoad(buffer, index))


def _address(buffer: Any, index: int, extent: int) -> Any:
    """A pointer to ``extent`` registers of ``buffer`` from ``index`` (an access pointer,
    so TVM keeps the registers the callee writes through it)."""
    return buffer.access_ptr("rw", offset=int_imm(index), extent=int_imm(extent))
