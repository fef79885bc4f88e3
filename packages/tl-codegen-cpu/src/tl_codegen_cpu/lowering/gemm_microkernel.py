"""The CPU GEMM micro-kernel: ``C += A @ B`` on tiles as register-tiled, vectorized TIR.

The tile is cut into register tiles of ``rows x cols`` elements of C. Each
register tile keeps its accumulators in small block-local arrays of one vector
each: scope ``global`` and under 1024 bytes, because TVM 0.27's
``LowerTVMBuiltin`` turns every other CPU allocation into a heap workspace and
LLVM then cannot keep the accumulators in registers. Per step of k, every
accumulator vector gets one fused multiply-add of a broadcast element of A by a
vector of B. Tile sizes that are not multiples of the register tile get
remainder register tiles of the leftover rows / columns.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tvm import tirx

from tl_codegen_cpu.lowering.gemm_c_prelude import C_MAX_ROWS, C_MAX_VECTORS, C_PRELUDE_LANES
from tl_codegen_cpu.lowering.half_conversions import (
    C_HALF_GEMM_DTYPES,
    C_HALF_PRODUCT_DTYPES,
    transpose_call,
)
from tl_codegen_cpu.lowering.tile_transpose import emit_block_transpose, transposes_in_blocks
from tl_codegen_cpu.lowering.vector_isa import VectorISA
from tl_ir import scopes

PrimExprLike = Any  # an int or a tvm.tirx PrimExpr

#: Accumulator dtype -> the operand dtypes it may accumulate.
SUPPORTED_OPERAND_DTYPES: dict[str, tuple[str, ...]] = {
    "float32": ("float32", "float16", "bfloat16"),
    "float64": ("float64", "float32"),
    "int32": ("int32", "int8", "uint8", "int16"),
}


#: The emission styles of `emit_gemm_microkernel`.
MICROKERNEL_STYLES: tuple[str, ...] = ("tir", "c-vector-extension")


@dataclass(frozen=True)
class GemmOperand:
    """A tile operand: a buffer and the index of the tile's first element.

    Args:
        buffer: the TIR buffer (a ``tvm.ir.Var`` of buffer type) of rank >= 2;
            the tile spans its last two dimensions.
        offset: one index expression (int or PrimExpr) per buffer dimension:
            where the tile's element ``[0, 0]`` lies.
    """

    buffer: Any
    offset: tuple[PrimExprLike, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "offset", tuple(self.offset))


@dataclass(frozen=True)
class RegisterTile:
    """The block of C kept in registers: ``rows`` x ``cols`` elements.

    Raises:
        ValueError: if ``rows`` or ``cols`` is not a positive int.
    """

    rows: int
    cols: int

    def __post_init__(self) -> None:
        for field_name in ("rows", "cols"):
            value = getattr(self, field_name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(
                    f"RegisterTile {field_name}: expected a positive int, got {value!r}"
                )


#: Cycles one FMA takes to feed the next on the same accumulator (4 on Intel cores since
#: Skylake, 5 on AMD Zen 2-4): a register tile with fewer FMAs per k step than this many
#: cycles' worth waits on its chains.
_FMA_LATENCY_CYCLES = 5
#: FMAs issued per cycle (two FMA pipes on every x86 core with AVX2 or AVX-512).
_FMA_PER_CYCLE = 2


def _strip_cycles(m: int, rows: int, vectors: int) -> int:
    # Cycles per k step for m rows cut into tiles of `rows` (the last one shorter): each
    # tile issues rows * vectors FMAs, bounded below by the FMA latency, plus one cycle
    # for what every tile pays besides (its loop, B's loads, its accumulators' traffic).
    def tile(r: int) -> int:
        return max(math.ceil(r * vectors / _FMA_PER_CYCLE), _FMA_LATENCY_CYCLES) + 1

    full, rest = divmod(m, rows)
    return full * tile(rows) + (tile(rest) if rest else 0)


def choose_register_tile(m: int, n: int, acc_dtype: str, isa: VectorISA) -> RegisterTile:
    """Choose the register tile for an ``m x n`` tile of C in ``acc_dtype``.

    Two vectors of columns by up to as many rows as the accumulator budget allows: half
    the register file with 32 registers (AVX-512: 8 x 32 for fp32, measured best against
    wider or taller tiles, docs/cpu.md), all but four with 16 (AVX2: 6 x 16, 12
    accumulators, two B vectors, one broadcast; 1.2x faster than 4 x 16 on a 16-row
    tile, since 8 accumulators cannot cover the FMA latency of two pipes). Among row
    counts up to that maximum, the one whose tiles of ``m`` take the fewest cycles per k
    step wins (a short tile, remainder included, costs at least the FMA latency; ties:
    more rows).

    Args:
        m: rows of the C tile (>= 1).
        n: columns of the C tile (>= 1).
        acc_dtype: the accumulator dtype (C's dtype).
        isa: the vector unit.

    Returns:
        A `RegisterTile` with ``rows <= m`` and ``cols <= n``, ``cols`` a
        multiple of the vector lanes unless it equals ``n``.
    """
    lanes = isa.lanes(acc_dtype)
    registers = isa.num_vector_registers
    accumulators = max(1, registers // 2 if registers >= 32 else registers - 4)
    vectors = max(1, min(2, math.ceil(n / lanes), accumulators))
    cols = min(vectors * lanes, n)
    max_rows = max(1, min(m, accumulators // vectors))
    rows = min(
        range(1, max_rows + 1),
        key=lambda r: (_strip_cycles(m, r, vectors), -r),
    )
    return RegisterTile(rows=rows, cols=cols)


def _check_extent(name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"emit_gemm_microkernel {name}: expected a positive int, got {value!r}")
    return value


def _check_operand(
    role: str, operand: object, rows: int, cols: int
) -> tuple[Any, list[PrimExprLike]]:
    if not isinstance(operand, GemmOperand):
        raise TypeError(
            f"emit_gemm_microkernel {role}: expected a GemmOperand, got {type(operand).__name__}"
        )
    buffer = operand.buffer
    if not tirx.is_buffer_var(buffer):
        raise TypeError(
            f"emit_gemm_microkernel {role}.buffer: expected a TIR buffer, got {type(buffer).__name__}"
        )
    shape = list(buffer.shape)
    if len(shape) < 2:
        raise ValueError(
            f"emit_gemm_microkernel {role}.buffer: expected rank >= 2, "
            f"got shape {[str(s) for s in shape]}"
        )
    if len(operand.offset) != len(shape):
        raise ValueError(
            f"emit_gemm_microkernel {role}.offset: expected {len(shape)} indices "
            f"(one per dimension of {buffer.name}), got {len(operand.offset)}"
        )
    # Static bounds check where both the offset and the shape are constants.
    for dim, extent in ((-2, rows), (-1, cols)):
        start, size = operand.offset[dim], shape[dim]
        static = isinstance(start, int | tirx.IntImm) and isinstance(size, int | tirx.IntImm)
        if static and (int(start) < 0 or int(start) + extent > int(size)):
            raise ValueError(
                f"emit_gemm_microkernel {role}: the {rows}x{cols} tile at offset "
                f"{[str(o) for o in operand.offset]} does not fit buffer "
                f"{buffer.name} of shape {[str(s) for s in shape]}"
            )
    return buffer, list(operand.offset)


#: The product dtypes `emit_gemm_microkernel` rounds products to (fp32 accumulators).
ROUNDED_PRODUCT_DTYPES: tuple[str, ...] = ("float16", "bfloat16")


def _check_product_dtype(
    product_dtype: object, acc_dtype: str, a_buffer: Any, b_buffer: Any
) -> bool:
    """Whether products are rounded to ``product_dtype`` (validated) before the add."""
    if product_dtype is None or product_dtype == acc_dtype:
        return False
    if product_dtype not in ROUNDED_PRODUCT_DTYPES or acc_dtype != "float32":
        raise ValueError(
            f"emit_gemm_microkernel product_dtype: expected None, {acc_dtype!r} or (with a "
            f"float32 C) one of {list(ROUNDED_PRODUCT_DTYPES)}, got {product_dtype!r}"
        )
    for role, buffer in (("a", a_buffer), ("b", b_buffer)):
        if str(buffer.dtype) != product_dtype:
            raise ValueError(
                f"emit_gemm_microkernel {role}: products rounded to {product_dtype} need "
                f"{product_dtype} operands, got {buffer.dtype}"
            )
    return True


def _seq(stmts: Sequence[tirx.Stmt]) -> tirx.Stmt:
    # TVM refuses a SeqStmt of one statement.
    return stmts[0] if len(stmts) == 1 else tirx.SeqStmt(list(stmts))


def _index(offset: Sequence[PrimExprLike], row: PrimExprLike, col: PrimExprLike) -> list[Any]:
    return [*offset[:-2], offset[-2] + row, offset[-1] + col]


def emit_gemm_microkernel(
    a: GemmOperand,
    b: GemmOperand,
    c: GemmOperand,
    m: int,
    n: int,
    k: int,
    *,
    transpose_a: bool = False,
    transpose_b: bool = False,
    isa: VectorISA | None = None,
    register_tile: RegisterTile | None = None,
    name_hint: str = "gemm",
    style: str = "tir",
    pack_transposed_b: bool = True,
    product_dtype: str | None = None,
) -> tirx.Stmt:
    """Return a TIR statement computing ``C[m x n] += op(A)[m x k] @ op(B)[k x n]``.

    ``op(A)`` is A's tile ``[m, k]``, or the transpose of its ``[k, m]`` tile
    when ``transpose_a``; likewise for B (``[k, n]`` or ``[n, k]``). Products
    are formed in C's dtype (fp16/bf16 operands accumulate in fp32, int8 in
    int32).

    Args:
        a, b, c: the operands (buffer and tile offset each).
        m, n, k: the tile extents (positive ints).
        transpose_a, transpose_b: whether A / B are stored transposed.
        isa: the vector unit to target (default: AVX-512, 32 x 512-bit registers).
        register_tile: override the register tile (default: `choose_register_tile`).
        name_hint: a prefix for the accumulator buffers' names.
        style: ``"tir"`` (default; for LLVM) builds every register tile from
            TIR loops. ``"c-vector-extension"`` (for the C path) turns each
            full fp32 register tile with contiguous B rows into a call of
            ``tl_gemm_f32x<lanes>`` from ``include/tl_gemm_f32.h``, whose GCC
            vector-extension accumulators gcc keeps in registers; the C
            toolchain adds the prelude. Other tiles use TIR loops.
        pack_transposed_b: with ``transpose_b``, first copy B's tile into a
            block-local ``[k, n]`` array so the vector loads of B are
            contiguous (1024^3 on llvm: 0.93x numpy packed, 0.65x strided;
            docs/cpu.md). Costs ``k * n`` extra elements.
        product_dtype: the dtype each product is formed and rounded in before
            it is added to C (default: C's dtype). ``"float16"`` or
            ``"bfloat16"`` (with an fp32 C and both operands of that dtype)
            keeps a program's half-precision products: each ``A * B`` is
            rounded to the half type, then widened and added, bit-identical
            to the scalar ``C[i, j] += A[i, k] * B[k, j]`` it replaces. On
            ``c``, fp16 products call ``tl_gemm_f16r_f32x<lanes>``
            (``include/tl_half.h``: AVX-512-FP16 ``vmulph``
            where the CPU has it).

    Returns:
        A ``tvm.tirx.Stmt``; it allocates small block-local accumulator
        arrays (and the packed B tile when packing) and reads/writes only the
        given tiles.

    Raises:
        TypeError: if an operand is not a `GemmOperand` over a TIR buffer.
        ValueError: for non-positive extents, wrong offset ranks, a tile that
            statically does not fit its buffer, an unsupported dtype mix or
            an unknown ``style``.
    """
    if style not in MICROKERNEL_STYLES:
        raise ValueError(
            f"emit_gemm_microkernel style: expected one of {list(MICROKERNEL_STYLES)}, got {style!r}"
        )
    m, n, k = _check_extent("m", m), _check_extent("n", n), _check_extent("k", k)
    a_buffer, a_offset = _check_operand("a", a, *((k, m) if transpose_a else (m, k)))
    b_buffer, b_offset = _check_operand("b", b, *((n, k) if transpose_b else (k, n)))
    c_buffer, c_offset = _check_operand("c", c, m, n)
    acc_dtype = str(c_buffer.dtype)
    allowed = SUPPORTED_OPERAND_DTYPES.get(acc_dtype)
    if allowed is None:
        raise ValueError(
            f"emit_gemm_microkernel c: accumulator dtype {acc_dtype!r} is not supported; "
            f"expected one of {sorted(SUPPORTED_OPERAND_DTYPES)}"
        )
    for role, buffer in (("a", a_buffer), ("b", b_buffer)):
        if str(buffer.dtype) not in allowed:
            raise ValueError(
                f"emit_gemm_microkernel {role}: dtype {buffer.dtype} cannot accumulate into "
                f"{acc_dtype}; expected one of {list(allowed)}"
            )
    rounded = _check_product_dtype(product_dtype, acc_dtype, a_buffer, b_buffer)
    isa = isa if isa is not None else VectorISA()
    if transpose_b and pack_transposed_b:
        # Transpose B's tile once into a contiguous [k, n] array, then run the
        # non-transposed kernel on it.
        packed = tirx.decl_buffer((k, n), str(b_buffer.dtype), name=f"{name_hint}_b_packed")
        pack_lanes = isa.lanes(str(b_buffer.dtype))

        def pack_columns(col0: int, count: int, width: int) -> tirx.Stmt:
            # Per chunk of `width` columns (rows of the stored B), walk k: one
            # vector store fed by a strided (gathered) load across those rows.
            kk, chunk, lane = (tirx.Var(v, "int32") for v in ("kk", "chunk", "lane"))
            col = col0 + chunk * width + lane
            store = tirx.BufferStore(
                packed, tirx.BufferLoad(b_buffer, _index(b_offset, col, kk)), [kk, col]
            )
            kind = tirx.ForKind.VECTORIZED if width > 1 else tirx.ForKind.SERIAL
            loop = tirx.For(lane, 0, width, kind, store)
            loop = tirx.For(kk, 0, k, tirx.ForKind.SERIAL, loop)
            return tirx.For(chunk, 0, count, tirx.ForKind.SERIAL, loop)

        full_chunks, rest = divmod(n, pack_lanes)
        pack_parts = []
        if full_chunks:
            pack_parts.append(pack_columns(0, full_chunks, pack_lanes))
        if rest:
            pack_parts.append(pack_columns(full_chunks * pack_lanes, 1, rest))
        pack = _seq(pack_parts)
        c_fp32 = style == "c-vector-extension" and acc_dtype == str(b_buffer.dtype) == "float32"
        if c_fp32 and not b_buffer.strides:
            # gcc leaves the strided gather scalar: 8 x 8 register-block transposes.
            pack = transpose_call(b_buffer, b_offset, packed, k, n)
        elif style == "tir" and transposes_in_blocks(k, n):
            pack = emit_block_transpose(b_buffer, b_offset, packed, k, n)
        kernel = emit_gemm_microkernel(
            a,
            GemmOperand(packed, (0, 0)),
            c,
            m,
            n,
            k,
            transpose_a=transpose_a,
            transpose_b=False,
            isa=isa,
            register_tile=register_tile,
            name_hint=name_hint,
            style=style,
            product_dtype=product_dtype,
        )
        return tirx.SeqStmt([tirx.AllocBuffer(packed), pack, kernel])
    tile = (
        register_tile if register_tile is not None else choose_register_tile(m, n, acc_dtype, isa)
    )
    if not isinstance(tile, RegisterTile):
        raise TypeError(
            f"emit_gemm_microkernel register_tile: expected a RegisterTile, got {type(tile).__name__}"
        )
    rows, cols = min(tile.rows, m), min(tile.cols, n)
    lanes = isa.lanes(acc_dtype)
    # Products are formed in C's dtype, or in the program's half type and rounded there.
    multiply_dtype = str(product_dtype) if rounded else acc_dtype

    def load_a(row: PrimExprLike, kk: PrimExprLike) -> Any:
        index = _index(a_offset, kk, row) if transpose_a else _index(a_offset, row, kk)
        value = tirx.BufferLoad(a_buffer, index)
        return value if str(a_buffer.dtype) == multiply_dtype else tirx.Cast(multiply_dtype, value)

    def load_b(kk: PrimExprLike, col: PrimExprLike) -> Any:
        index = _index(b_offset, col, kk) if transpose_b else _index(b_offset, kk, col)
        value = tirx.BufferLoad(b_buffer, index)
        return value if str(b_buffer.dtype) == multiply_dtype else tirx.Cast(multiply_dtype, value)

    def product(row: PrimExprLike, kk: PrimExprLike, col: PrimExprLike) -> Any:
        value = load_a(row, kk) * load_b(kk, col)
        return tirx.Cast(acc_dtype, value) if rounded else value

    counter = [0]
    # fp32 tiles, or fp16/bf16 tiles widened by the CPU's conversions (half_conversions).
    operand_dtype = str(a_buffer.dtype)
    c_kernel = "f32" if operand_dtype == "float32" else C_HALF_GEMM_DTYPES.get(operand_dtype)
    if rounded:
        c_kernel = C_HALF_PRODUCT_DTYPES.get(operand_dtype)
    use_c_calls = (
        style == "c-vector-extension"
        and acc_dtype == "float32"
        and c_kernel is not None
        and str(b_buffer.dtype) == operand_dtype
        and not transpose_b
        and not a_buffer.strides
        and not b_buffer.strides
        and not c_buffer.strides
    )

    def c_call_stmt(
        row0: PrimExprLike, col0: PrimExprLike, tile_rows: int, tile_cols: int
    ) -> tirx.Stmt:
        a_row_pitch = a_buffer.shape[-1]
        if transpose_a:
            a_first = _index(a_offset, 0, row0)
            a_row_stride, a_k_stride = 1, a_row_pitch
        else:
            a_first = _index(a_offset, row0, 0)
            a_row_stride, a_k_stride = a_row_pitch, 1
        call = tirx.call_extern(
            "int32",
            f"tl_gemm_f32x{lanes}" if c_kernel == "f32" else f"tl_gemm_{c_kernel}_f32x{lanes}",
            tile_rows,
            tile_cols // lanes,
            k,
            tirx.address_of(tirx.BufferLoad(a_buffer, a_first)),
            a_row_stride,
            a_k_stride,
            tirx.address_of(tirx.BufferLoad(b_buffer, _index(b_offset, 0, col0))),
            b_buffer.shape[-1],
            tirx.address_of(tirx.BufferLoad(c_buffer, _index(c_offset, row0, col0))),
            c_buffer.shape[-1],
        )
        return tirx.Evaluate(call)

    def register_tile_stmt(
        row0: PrimExprLike, col0: PrimExprLike, tile_rows: int, tile_cols: int
    ) -> tirx.Stmt:
        # One accumulator array per (row, vector of columns): each stays < 1024 B
        # and scope "global", so it is an alloca that LLVM promotes to a register.
        if (
            use_c_calls
            and tile_cols % lanes == 0
            and lanes in C_PRELUDE_LANES
            and tile_rows <= C_MAX_ROWS
            and tile_cols // lanes <= C_MAX_VECTORS
        ):
            return c_call_stmt(row0, col0, tile_rows, tile_cols)
        counter[0] += 1
        site = counter[0]
        chunks = [(c0, min(lanes, tile_cols - c0)) for c0 in range(0, tile_cols, lanes)]
        accs = {
            (r, ci): tirx.decl_buffer(
                (width,), acc_dtype, name=f"{name_hint}_acc{site}_r{r}_v{ci}", scope=scopes.GLOBAL
            )
            for r in range(tile_rows)
            for ci, (_, width) in enumerate(chunks)
        }

        def lane_loop(width: int, body_of: Any) -> tirx.Stmt:
            lane = tirx.Var("lane", "int32")
            kind = tirx.ForKind.VECTORIZED if width > 1 else tirx.ForKind.SERIAL
            return tirx.For(lane, 0, width, kind, body_of(lane))

        def c_index(r: int, c0: int, lane: Any) -> list[Any]:
            return _index(c_offset, row0 + r, col0 + c0 + lane)

        loads, updates, stores = [], [], []
        kk = tirx.Var("kk", "int32")
        for (r, ci), acc in accs.items():
            c0, width = chunks[ci]
            loads.append(
                lane_loop(
                    width,
                    lambda lane, acc=acc, r=r, c0=c0: tirx.BufferStore(
                        acc, tirx.BufferLoad(c_buffer, c_index(r, c0, lane)), [lane]
                    ),
                )
            )
            updates.append(
                lane_loop(
                    width,
                    lambda lane, acc=acc, r=r, c0=c0: tirx.BufferStore(
                        acc,
                        tirx.BufferLoad(acc, [lane]) + product(row0 + r, kk, col0 + c0 + lane),
                        [lane],
                    ),
                )
            )
            stores.append(
                lane_loop(
                    width,
                    lambda lane, acc=acc, r=r, c0=c0: tirx.BufferStore(
                        c_buffer, tirx.BufferLoad(acc, [lane]), c_index(r, c0, lane)
                    ),
                )
            )
        k_loop = tirx.For(kk, 0, k, tirx.ForKind.SERIAL, _seq(updates))
        allocs = [tirx.AllocBuffer(acc) for acc in accs.values()]
        return tirx.SeqStmt([*allocs, *loads, k_loop, *stores])

    def tile_loops(
        row_base: int, row_tiles: int, col_base: int, col_tiles: int, tile_rows: int, tile_cols: int
    ) -> tirx.Stmt | None:
        if row_tiles == 0 or col_tiles == 0:
            return None
        io = tirx.Var("io", "int32")
        jo = tirx.Var("jo", "int32")
        row0 = row_base + io * tile_rows if row_tiles > 1 else tirx.const(row_base, "int32")
        col0 = col_base + jo * tile_cols if col_tiles > 1 else tirx.const(col_base, "int32")
        body = register_tile_stmt(row0, col0, tile_rows, tile_cols)
        if col_tiles > 1:
            body = tirx.For(jo, 0, col_tiles, tirx.ForKind.SERIAL, body)
        if row_tiles > 1:
            body = tirx.For(io, 0, row_tiles, tirx.ForKind.SERIAL, body)
        return body

    full_rows, rem_rows = divmod(m, rows)
    full_cols, rem_cols = divmod(n, cols)
    pieces = [
        tile_loops(0, full_rows, 0, full_cols, rows, cols),
        tile_loops(0, full_rows, full_cols * cols, 1 if rem_cols else 0, rows, rem_cols),
        tile_loops(full_rows * rows, 1 if rem_rows else 0, 0, full_cols, rem_rows, cols),
        tile_loops(
            full_rows * rows,
            1 if rem_rows else 0,
            full_cols * cols,
            1 if rem_cols else 0,
            rem_rows,
            rem_cols,
        ),
    ]
    stmts = [piece for piece in pieces if piece is not None]
    return _seq(stmts)
