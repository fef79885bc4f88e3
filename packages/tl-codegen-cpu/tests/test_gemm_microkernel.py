"""The CPU GEMM micro-kernel: numerics against numpy for many shapes, dtypes and transposes."""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from cpu_passes_testing import PAD, microkernel_func, random_array, run_on_host
from cpu_reference_kernels import tile_gemm_prim_func
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tvm import tirx

from tl_codegen_cpu.lowering import (
    GemmOperand,
    RegisterTile,
    VectorISA,
    choose_register_tile,
    emit_gemm_microkernel,
)


def check_microkernel(
    m: int,
    n: int,
    k: int,
    transpose_a: bool,
    transpose_b: bool,
    dtype: str = "float32",
    accum_dtype: str = "float32",
    register_tile: RegisterTile | None = None,
) -> None:
    rng = np.random.default_rng(m * 10007 + n * 101 + k)
    a_tile = random_array(rng, (m, k), dtype)
    b_tile = random_array(rng, (k, n), dtype)
    c_tile = random_array(rng, (m, n), accum_dtype)
    stored_a = a_tile.T if transpose_a else a_tile
    stored_b = b_tile.T if transpose_b else b_tile
    sentinel = 7

    def padded(x: np.ndarray, dt: str) -> np.ndarray:
        out = np.full((x.shape[0] + 2 * PAD[0], x.shape[1] + 2 * PAD[1]), sentinel, dtype=dt)
        out[PAD[0] : PAD[0] + x.shape[0], PAD[1] : PAD[1] + x.shape[1]] = x
        return out

    func = microkernel_func(
        m,
        n,
        k,
        transpose_a=transpose_a,
        transpose_b=transpose_b,
        dtype=dtype,
        accum_dtype=accum_dtype,
        register_tile=register_tile,
    )
    c_in = padded(c_tile, accum_dtype)
    _, _, c_out = run_on_host(func, padded(stored_a, dtype), padded(stored_b, dtype), c_in)
    expected = c_in.copy()
    product = a_tile.astype(accum_dtype) @ b_tile.astype(accum_dtype)
    expected[PAD[0] : PAD[0] + m, PAD[1] : PAD[1] + n] += product
    # Inputs are small multiples of 1/4: every result is exact in fp32/int32.
    np.testing.assert_array_equal(c_out, expected)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    m=st.integers(1, 21),
    n=st.integers(1, 40),
    k=st.integers(1, 9),
    transpose_a=st.booleans(),
    transpose_b=st.booleans(),
)
def test_microkernel_matches_numpy_for_any_small_shape(
    m: int, n: int, k: int, transpose_a: bool, transpose_b: bool
) -> None:
    check_microkernel(m, n, k, transpose_a, transpose_b)


@pytest.mark.parametrize(
    ("m", "n", "k"), [(1, 1, 1), (8, 32, 4), (9, 33, 3), (17, 47, 5), (16, 64, 2)]
)
@pytest.mark.parametrize(("transpose_a", "transpose_b"), [(False, False), (True, True)])
def test_microkernel_edge_shapes(
    m: int, n: int, k: int, transpose_a: bool, transpose_b: bool
) -> None:
    check_microkernel(m, n, k, transpose_a, transpose_b)


@pytest.mark.parametrize(
    "register_tile", [RegisterTile(3, 5), RegisterTile(1, 16), RegisterTile(4, 48)]
)
def test_microkernel_with_forced_register_tiles(register_tile: RegisterTile) -> None:
    check_microkernel(13, 37, 3, False, True, register_tile=register_tile)


@pytest.mark.parametrize(
    ("dtype", "accum_dtype"),
    [("float16", "float32"), ("int8", "int32"), ("float64", "float64"), ("uint8", "int32")],
)
def test_microkernel_mixed_precision(dtype: str, accum_dtype: str) -> None:
    check_microkernel(11, 35, 6, False, False, dtype=dtype, accum_dtype=accum_dtype)


def test_bfloat16_operands_compile() -> None:
    # numpy has no bfloat16: check the IR builds and compiles (values are checked via fp16).
    func = microkernel_func(8, 32, 4, dtype="bfloat16", accum_dtype="float32")
    import tvm

    from tl_codegen_cpu.lowering import host_cpu_name

    tvm.compile(func, target=tvm.target.Target({"kind": "llvm", "mcpu": host_cpu_name()}))


@pytest.mark.parametrize(
    ("m", "n", "k", "block"),
    [(64, 64, 64, (32, 32, 16)), (70, 50, 33, (32, 32, 16)), (5, 3, 2, (8, 16, 4))],
)
@pytest.mark.parametrize(
    ("transpose_a", "transpose_b"), [(False, False), (True, False), (False, True)]
)
def test_reference_tile_gemm_kernel(
    m: int, n: int, k: int, block: tuple[int, int, int], transpose_a: bool, transpose_b: bool
) -> None:
    rng = np.random.default_rng(1)
    a = random_array(rng, (m, k), "float32")
    b = random_array(rng, (k, n), "float32")
    func = tile_gemm_prim_func(m, n, k, *block, transpose_a=transpose_a, transpose_b=transpose_b)
    stored_a = np.ascontiguousarray(a.T) if transpose_a else a
    stored_b = np.ascontiguousarray(b.T) if transpose_b else b
    _, _, c = run_on_host(func, stored_a, stored_b, np.full((m, n), 99, np.float32))
    np.testing.assert_array_equal(c, a @ b)


def test_register_tile_fits_register_file_and_tile() -> None:
    for isa in (VectorISA(512, 32), VectorISA(256, 16), VectorISA(128, 16)):
        for m, n in [(1, 1), (128, 128), (70, 50), (3, 100), (128, 8)]:
            tile = choose_register_tile(m, n, "float32", isa)
            lanes = isa.lanes("float32")
            vectors = -(-tile.cols // lanes)
            assert tile.rows <= m and tile.cols <= n
            assert tile.rows * vectors + vectors + 1 <= isa.num_vector_registers


def test_register_tile_for_the_aligned_avx512_case() -> None:
    # The measured winner (docs/cpu.md): 8 rows x 2 vectors of 16 fp32 lanes.
    assert choose_register_tile(128, 128, "float32", VectorISA(512, 32)) == RegisterTile(8, 32)


def test_accumulators_are_small_global_buffers() -> None:
    stmt = microkernel_func(16, 64, 4).body
    sizes: list[tuple[str, int]] = []

    def visit(node: tirx.AllocBuffer) -> None:
        buffer = node.buffer
        nbytes = int(np.prod([int(e) for e in buffer.shape])) * buffer.dtype.bits // 8
        sizes.append((str(buffer.scope()), nbytes))

    import tvm_ffi

    tvm_ffi.structural_walk(stmt, (tirx.AllocBuffer, visit), order="post")
    assert sizes, "the micro-kernel allocates its accumulators"
    assert all(scope == "global" and nbytes < 1024 for scope, nbytes in sizes)


def _operand(shape: tuple[int, ...], dtype: str = "float32") -> GemmOperand:
    return GemmOperand(tirx.decl_buffer(shape, dtype, name="X"), (0,) * len(shape))


def test_bad_inputs_raise_clear_errors() -> None:
    a, b, c = _operand((4, 4)), _operand((4, 4)), _operand((4, 4))
    with pytest.raises(ValueError, match="m: expected a positive int, got 0"):
        emit_gemm_microkernel(a, b, c, 0, 4, 4)
    with pytest.raises(TypeError, match="a: expected a GemmOperand"):
        emit_gemm_microkernel("A", b, c, 4, 4, 4)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="does not fit buffer"):
        emit_gemm_microkernel(a, b, c, 8, 4, 4)
    with pytest.raises(ValueError, match=r"offset: expected 2 indices"):
        emit_gemm_microkernel(GemmOperand(a.buffer, (0,)), b, c, 4, 4, 4)
    with pytest.raises(ValueError, match="cannot accumulate into float32"):
        emit_gemm_microkernel(_operand((4, 4), "int8"), b, c, 4, 4, 4)
    with pytest.raises(ValueError, match="accumulator dtype 'float16' is not supported"):
        emit_gemm_microkernel(a, b, _operand((4, 4), "float16"), 4, 4, 4)
    with pytest.raises(ValueError, match="rows: expected a positive int"):
        RegisterTile(0, 16)
    with pytest.raises(ValueError, match="style: expected one of"):
        emit_gemm_microkernel(a, b, c, 4, 4, 4, style="asm")


def test_c_vector_extension_style_calls_the_prelude_for_full_tiles() -> None:
    a, b, c = _operand((16, 8)), _operand((8, 40)), _operand((16, 40))
    stmt = emit_gemm_microkernel(
        a, b, c, 16, 40, 8, style="c-vector-extension", register_tile=RegisterTile(8, 32)
    )
    text = stmt.script()
    # Two full 8x32 tiles call the C micro-kernel; the 8-column remainder stays in TIR.
    assert text.count('"tl_gemm_f32x16"') == 1  # one call inside the row-tile loop
    assert "T.vectorized(8)" in text
    assert "tl_gemm_f32x16" not in emit_gemm_microkernel(a, b, c, 16, 40, 8).script()


def test_aligned_fp32_tile_keeps_accumulators_in_zmm_registers() -> None:
    # The speed property, checked structurally: on AVX-512 the 128x128x32 tile's
    # inner loop is fused multiply-adds on zmm registers, with no heap workspace
    # for the accumulators (only the three block tiles get one on llvm).
    import re

    import tvm
    from cpu_passes_testing import HOST_TARGET

    from tl_codegen_cpu.lowering import vector_isa_for_target

    if vector_isa_for_target(HOST_TARGET).vector_bits < 512:
        pytest.skip("the host has no AVX-512")
    func = tile_gemm_prim_func(256, 256, 64, 128, 128, 32)
    assembly = tvm.compile(func, target=HOST_TARGET).mod.inspect_source("asm")
    assert len(re.findall(r"vfmadd\w+\s+[^\n]*%zmm", assembly)) >= 16
    workspace_loads = re.findall(r"mov\w*\s+__TVMBackendAllocWorkspace@GOTPCREL", assembly)
    assert len(workspace_loads) == 3  # A_shared, B_shared, C_local; none per accumulator


@pytest.mark.parametrize(
    ("mcpu", "bits", "registers"),
    [("skylake-avx512", 512, 32), ("znver4", 512, 32), ("znver2", 256, 16), ("core2", 128, 16)],
)
def test_vector_width_follows_the_cpu_features(mcpu: str, bits: int, registers: int) -> None:
    # TVM's llvm_get_vector_width answers 512 for every x86 CPU; an AVX2 host given
    # 16-lane fp32 vectors ran gcc's GEMM kernel at a tenth of its speed.
    from tl_codegen_cpu.lowering import vector_isa_for_target

    isa = vector_isa_for_target(tvm.target.Target({"kind": "llvm", "mcpu": mcpu}))
    assert (isa.vector_bits, isa.num_vector_registers) == (bits, registers)


@pytest.mark.parametrize(("m", "rows"), [(16, 6), (128, 6), (64, 6), (4, 4), (3, 3)])
def test_register_tile_on_avx2_uses_twelve_accumulators(m: int, rows: int) -> None:
    # 6 x 16 (12 of 16 registers) where m allows: 8 accumulators (4 x 16) cannot cover
    # two FMA pipes' latency; a 16-row tile runs as 6 + 6 + 4 rows rather than 4 x 4.
    assert choose_register_tile(m, 128, "float32", VectorISA(256, 16)) == RegisterTile(rows, 16)


def test_register_tile_on_avx512_keeps_the_measured_shapes() -> None:
    isa = VectorISA(512, 32)
    for m in (8, 16, 32, 64, 128, 256):
        assert choose_register_tile(m, 128, "float32", isa) == RegisterTile(8, 32)
