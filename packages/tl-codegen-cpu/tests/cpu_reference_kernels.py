"""Hand-built TIR kernels of the shape tile-op lowering produces, for tests and benchmarks.

`tile_gemm_prim_func` is the CPU lowering of the GEMM kernel of docs/language.md
written out by hand: the grid of C blocks is one parallel loop, each block
copies its A and B tiles into block-local arrays, runs the GEMM micro-kernel
for every step of k and writes its C tile back.
"""

from __future__ import annotations

from typing import Any

import tvm
from tvm import tirx

from tl_codegen_cpu.lowering.gemm_microkernel import (
    GemmOperand,
    RegisterTile,
    emit_gemm_microkernel,
)
from tl_codegen_cpu.lowering.vector_isa import VectorISA


def _ceildiv(a: int, b: int) -> int:
    return -(-a // b)


def _loop_nest(extents: list[int], body_of: Any, vector_last: bool = True) -> tirx.Stmt:
    loop_vars = [tirx.Var(f"i{d}", "int32") for d in range(len(extents))]
    body = body_of(loop_vars)
    for depth in reversed(range(len(extents))):
        innermost = depth == len(extents) - 1
        kind = tirx.ForKind.VECTORIZED if innermost and vector_last else tirx.ForKind.SERIAL
        body = tirx.For(loop_vars[depth], 0, extents[depth], kind, body)
    return body


def tile_gemm_prim_func(
    m: int,
    n: int,
    k: int,
    block_m: int = 128,
    block_n: int = 128,
    block_k: int = 32,
    *,
    dtype: str = "float32",
    accum_dtype: str = "float32",
    transpose_a: bool = False,
    transpose_b: bool = False,
    isa: VectorISA | None = None,
    register_tile: RegisterTile | None = None,
    name: str = "main",
    style: str = "tir",
) -> tirx.PrimFunc:
    """Build ``C = op(A) @ op(B)`` as a block-tiled, multi-core TIR PrimFunc.

    Args:
        m, n, k: the problem size (positive ints).
        block_m, block_n, block_k: the block tile (positive ints); partial
            tiles at the edges are zero-padded on read and guarded on write.
        dtype: the dtype of A and B; C has ``accum_dtype``.
        transpose_a, transpose_b: A is ``[k, m]`` / B is ``[n, k]`` when set.
        isa, register_tile, style: passed to `emit_gemm_microkernel`
            (``style="c-vector-extension"`` for the C path).
        name: the PrimFunc's global symbol.

    Returns:
        A PrimFunc with params ``(A, B, C)``; it overwrites C.

    Raises:
        ValueError: for a non-positive size.
    """
    for label, value in (
        ("m", m),
        ("n", n),
        ("k", k),
        ("block_m", block_m),
        ("block_n", block_n),
        ("block_k", block_k),
    ):
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"tile_gemm_prim_func {label}: expected a positive int, got {value!r}")
    a = tirx.decl_buffer((k, m) if transpose_a else (m, k), dtype, name="A", data_alignment=64)
    b = tirx.decl_buffer((n, k) if transpose_b else (k, n), dtype, name="B", data_alignment=64)
    c = tirx.decl_buffer((m, n), accum_dtype, name="C", data_alignment=64)
    grid_m, grid_n = _ceildiv(m, block_m), _ceildiv(n, block_n)
    k_steps = _ceildiv(k, block_k)

    block = tirx.Var("block", "int32")
    by = block // grid_n if grid_n > 1 else block
    bx = block % grid_n if grid_n > 1 else tirx.const(0, "int32")
    ko = tirx.Var("ko", "int32")
    a_shape = (block_k, block_m) if transpose_a else (block_m, block_k)
    b_shape = (block_n, block_k) if transpose_b else (block_k, block_n)
    a_tile = tirx.decl_buffer(a_shape, dtype, name="A_shared", data_alignment=64)
    b_tile = tirx.decl_buffer(b_shape, dtype, name="B_shared", data_alignment=64)
    c_tile = tirx.decl_buffer((block_m, block_n), accum_dtype, name="C_local", data_alignment=64)

    def guarded_copy_in(src: Any, dst: Any, origin: tuple[Any, Any], full: bool) -> tirx.Stmt:
        rows, cols = (int(e) for e in dst.shape)
        src_rows, src_cols = (int(e) for e in src.shape)

        def body(iv: list[Any]) -> tirx.Stmt:
            index = [origin[0] + iv[0], origin[1] + iv[1]]
            value: Any = tirx.BufferLoad(src, index)
            if not full:
                inside = tirx.all(index[0] < src_rows, index[1] < src_cols)
                value = tirx.if_then_else(inside, value, tirx.const(0, src.dtype))
            return tirx.BufferStore(dst, value, iv)

        return _loop_nest([rows, cols], body)

    def origin(rows_block: Any, cols_block: Any, row_size: int, col_size: int) -> tuple[Any, Any]:
        return (rows_block * row_size, cols_block * col_size)

    if transpose_a:
        a_origin = origin(ko, by, block_k, block_m)
        a_full = k % block_k == 0 and m % block_m == 0
    else:
        a_origin = origin(by, ko, block_m, block_k)
        a_full = m % block_m == 0 and k % block_k == 0
    if transpose_b:
        b_origin = origin(bx, ko, block_n, block_k)
        b_full = n % block_n == 0 and k % block_k == 0
    else:
        b_origin = origin(ko, bx, block_k, block_n)
        b_full = k % block_k == 0 and n % block_n == 0

    micro = emit_gemm_microkernel(
        GemmOperand(a_tile, (0, 0)),
        GemmOperand(b_tile, (0, 0)),
        GemmOperand(c_tile, (0, 0)),
        block_m,
        block_n,
        block_k,
        transpose_a=transpose_a,
        transpose_b=transpose_b,
        isa=isa,
        register_tile=register_tile,
        style=style,
    )
    k_loop = tirx.For(
        ko,
        0,
        k_steps,
        tirx.ForKind.SERIAL,
        tirx.SeqStmt(
            [
                guarded_copy_in(a, a_tile, a_origin, a_full),
                guarded_copy_in(b, b_tile, b_origin, b_full),
                micro,
            ]
        ),
    )
    clear = _loop_nest(
        [block_m, block_n], lambda iv: tirx.BufferStore(c_tile, tirx.const(0, accum_dtype), iv)
    )
    c_full = m % block_m == 0 and n % block_n == 0

    def write_back(iv: list[Any]) -> tirx.Stmt:
        index = [by * block_m + iv[0], bx * block_n + iv[1]]
        store = tirx.BufferStore(c, tirx.BufferLoad(c_tile, iv), index)
        if c_full:
            return store
        return tirx.IfThenElse(tirx.all(index[0] < m, index[1] < n), store, None)

    write = _loop_nest([block_m, block_n], write_back, vector_last=c_full)
    block_body = tirx.SeqStmt(
        [
            tirx.AllocBuffer(a_tile),
            tirx.AllocBuffer(b_tile),
            tirx.AllocBuffer(c_tile),
            clear,
            k_loop,
            write,
        ]
    )
    body = tirx.For(block, 0, grid_m * grid_n, tirx.ForKind.PARALLEL, block_body)
    func = tirx.PrimFunc([a, b, c], body)
    return func.with_attrs({"global_symbol": name, "tir.noalias": True})


def tile_gemm_module(*args: Any, **kwargs: Any) -> tvm.IRModule:
    """`tile_gemm_prim_func` wrapped in an IRModule under its name (same arguments)."""
    func = tile_gemm_prim_func(*args, **kwargs)
    return tvm.IRModule({str(func.attrs["global_symbol"]): func})
