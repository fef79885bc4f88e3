"""The CPU toolchain: C (+OpenMP) and LLVM builds load, run correctly and report failures well."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import tvm
from cpu_passes_testing import build_prepared_c
from cpu_reference_kernels import tile_gemm_module
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tvm import tirx

from tl_backend_api import Toolchain, ToolchainError
from tl_codegen_cpu import (
    C_FLAGS,
    CpuBuildResult,
    GccToolchain,
    build,
    build_c,
    build_llvm,
    generate_c_source,
    insert_openmp_pragmas,
    prepare_for_c,
)
from tl_codegen_cpu.lowering import host_cpu_name
from tl_codegen_cpu.passes import PARALLEL_FOR_MARKER


def _run_gemm(
    result: CpuBuildResult,
    m: int,
    n: int,
    k: int,
    transpose_a: bool = False,
    transpose_b: bool = False,
) -> None:
    lib = tvm.runtime.load_module(str(result.library_path))
    rng = np.random.default_rng(0)
    a = (rng.integers(-4, 5, (m, k)) / 4).astype(np.float32)
    b = (rng.integers(-4, 5, (k, n)) / 4).astype(np.float32)
    stored_a = np.ascontiguousarray(a.T) if transpose_a else a
    stored_b = np.ascontiguousarray(b.T) if transpose_b else b
    c = tvm.runtime.tensor(np.full((m, n), 5, np.float32))
    lib[result.function_names[0]](tvm.runtime.tensor(stored_a), tvm.runtime.tensor(stored_b), c)
    np.testing.assert_array_equal(c.numpy(), a @ b)


@pytest.mark.parametrize("builder", [build_prepared_c, build_llvm])
@pytest.mark.parametrize(("m", "n", "k"), [(64, 96, 48), (37, 50, 19)])
def test_gemm_builds_and_runs(builder: object, m: int, n: int, k: int, tmp_path: Path) -> None:
    mod = tile_gemm_module(m, n, k, 32, 32, 16)
    result = builder(mod, tmp_path, name="gemm")  # type: ignore[operator]
    assert result.library_path == tmp_path / "gemm.so" and result.library_path.is_file()
    assert result.source_path.read_text() == result.source
    assert result.entry_symbol == "__tvm_ffi_main"
    assert result.function_names == ("main",)
    assert "gcc" in result.toolchain_version
    _run_gemm(result, m, n, k)


@pytest.mark.parametrize(
    ("m", "n", "k", "block"),
    [(64, 96, 48, (32, 64, 16)), (37, 50, 19, (32, 32, 16)), (128, 64, 8, (128, 64, 8))],
)
@pytest.mark.parametrize(
    ("transpose_a", "transpose_b"), [(False, False), (True, False), (False, True)]
)
def test_c_vector_extension_microkernel(
    m: int,
    n: int,
    k: int,
    block: tuple[int, int, int],
    transpose_a: bool,
    transpose_b: bool,
    tmp_path: Path,
) -> None:
    mod = tile_gemm_module(
        m,
        n,
        k,
        *block,
        transpose_a=transpose_a,
        transpose_b=transpose_b,
        style="c-vector-extension",
    )
    result = build_prepared_c(mod, tmp_path)
    # A transposed B tile is packed first, so the C micro-kernel runs in every case.
    assert "tl_gemm_f32x" in result.source
    assert "TVM_DLL int32_t tl_gemm_f32x" not in result.source
    _run_gemm(result, m, n, k, transpose_a, transpose_b)


@pytest.mark.parametrize("builder", [build_prepared_c, build_llvm])
@pytest.mark.parametrize(("dtype", "accum_dtype"), [("float16", "float32"), ("int8", "int32")])
def test_mixed_precision_gemm(
    builder: object, dtype: str, accum_dtype: str, tmp_path: Path
) -> None:
    m, n, k = 40, 36, 20
    mod = tile_gemm_module(m, n, k, 32, 32, 16, dtype=dtype, accum_dtype=accum_dtype)
    result = builder(mod, tmp_path)  # type: ignore[operator]
    lib = tvm.runtime.load_module(str(result.library_path))
    rng = np.random.default_rng(3)
    a = rng.integers(-8, 8, (m, k)).astype(dtype)
    b = rng.integers(-8, 8, (k, n)).astype(dtype)
    c = tvm.runtime.tensor(np.zeros((m, n), accum_dtype))
    lib["main"](tvm.runtime.tensor(a), tvm.runtime.tensor(b), c)
    np.testing.assert_array_equal(c.numpy(), a.astype(accum_dtype) @ b.astype(accum_dtype))


@pytest.mark.parametrize("builder", [build_prepared_c, build_llvm])
def test_bfloat16_gemm(builder: object, tmp_path: Path) -> None:
    m, n, k = 40, 36, 20
    rng = np.random.default_rng(4)
    a = rng.integers(-8, 8, (m, k)).astype(np.float32)
    b = rng.integers(-8, 8, (k, n)).astype(np.float32)

    def as_bfloat16(x: np.ndarray) -> object:
        # bfloat16 is the upper half of an fp32 (exact for these small integers).
        tensor = tvm.runtime.empty(x.shape, "bfloat16")
        tensor.copyfrom((x.view(np.uint32) >> 16).astype(np.uint16))
        return tensor

    mod = tile_gemm_module(m, n, k, 32, 32, 16, dtype="bfloat16", accum_dtype="float32")
    result = builder(mod, tmp_path)  # type: ignore[operator]
    lib = tvm.runtime.load_module(str(result.library_path))
    c = tvm.runtime.tensor(np.zeros((m, n), np.float32))
    lib["main"](as_bfloat16(a), as_bfloat16(b), c)
    np.testing.assert_array_equal(c.numpy(), a @ b)


def test_c_source_has_openmp_pragma_and_no_marker(tmp_path: Path) -> None:
    result = build_prepared_c(tile_gemm_module(64, 64, 32, 32, 32, 16), tmp_path)
    assert result.source.count("#pragma omp parallel for") == 1
    assert PARALLEL_FOR_MARKER not in result.source
    # Block-local tiles are stack arrays: no heap workspace inside the OpenMP region.
    assert "TVMBackendAllocWorkspace" not in result.source
    assert result.target_kind == "c"


@pytest.mark.parametrize("builder", [build_prepared_c, build_llvm])
def test_library_exports_the_entry_symbol(builder: object, tmp_path: Path) -> None:
    import subprocess

    result = builder(tile_gemm_module(32, 32, 32, 32, 32, 32), tmp_path)  # type: ignore[operator]
    symbols = subprocess.run(
        ["nm", "-D", str(result.library_path)], capture_output=True, text=True, check=True
    ).stdout
    assert re.search(rf"\bT {result.entry_symbol}\b", symbols)


def test_llvm_build_targets_the_host_cpu(tmp_path: Path) -> None:
    result = build_llvm(tile_gemm_module(32, 32, 32, 32, 32, 32), tmp_path)
    assert f"mcpu={host_cpu_name()}" in result.toolchain_version
    assert f'"target-cpu"="{host_cpu_name()}"' in result.source
    assert result.target_kind == "llvm"


def test_build_dispatches_on_target_kind(tmp_path: Path) -> None:
    mod = tile_gemm_module(16, 16, 16, 16, 16, 16)
    assert build(prepare_for_c(mod), "c", tmp_path / "c").target_kind == "c"
    assert build(mod, {"kind": "llvm"}, tmp_path / "l").target_kind == "llvm"  # type: ignore[arg-type]
    with pytest.raises(
        ValueError, match="expected a target of kind 'c' or 'llvm', got kind 'cuda'"
    ):
        build(mod, tvm.target.Target({"kind": "cuda", "arch": "sm_90"}), tmp_path)


def test_compiler_error_carries_message_and_source_path(tmp_path: Path) -> None:
    bad = tmp_path / "bad.c"
    bad.write_text("int f( { return 0; }\n")
    with pytest.raises(ToolchainError) as caught:
        GccToolchain().compile_shared_object([bad], tmp_path / "bad.so", options=C_FLAGS)
    error = caught.value
    assert error.source_path == str(bad)
    assert "error" in error.output and "bad.c" in error.output
    assert str(bad) in str(error) and "-fopenmp" in str(error)


def test_missing_compiler_is_a_toolchain_error(tmp_path: Path) -> None:
    tool = GccToolchain(executable="no-such-compiler-xyz")
    assert tool.discover() is None
    with pytest.raises(ToolchainError, match="'no-such-compiler-xyz' not found on PATH"):
        build_prepared_c(tile_gemm_module(16, 16, 16, 16, 16, 16), tmp_path, toolchain=tool)


def test_gcc_toolchain_satisfies_the_protocol() -> None:
    tool: Toolchain = GccToolchain()
    info = tool.discover()
    assert info is not None and info.version and tool.name == "gcc"


def test_bad_arguments_raise_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"build_c mod: expected a tvm\.IRModule, got str"):
        build_c("main", tmp_path)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="expected at least one PrimFunc"):
        generate_c_source(tvm.IRModule({}))


def test_pragma_rewrite_handles_leftover_markers() -> None:
    source = (
        f"TVM_DLL int32_t {PARALLEL_FOR_MARKER}();\n"
        f"  {PARALLEL_FOR_MARKER}();\n  for (int32_t i = 0; i < 4; ++i) {{\n  }}\n"
        f"  {PARALLEL_FOR_MARKER}();\n  x = 1;\n"
    )
    rewritten, count = insert_openmp_pragmas(source)
    assert count == 1
    assert (
        rewritten
        == "  #pragma omp parallel for\n  for (int32_t i = 0; i < 4; ++i) {\n  }\n  x = 1;\n"
    )


def test_grid_of_one_block_still_builds(tmp_path: Path) -> None:
    # The parallel loop of extent 1 is simplified away; its marker must not survive.
    result = build_prepared_c(tile_gemm_module(8, 8, 8, 8, 8, 8), tmp_path)
    assert PARALLEL_FOR_MARKER not in result.source
    _run_gemm(result, 8, 8, 8)


def test_too_large_block_locals_are_refused(tmp_path: Path) -> None:
    from tl_codegen_cpu.passes import BlockLocalsTooLargeError

    i = tirx.Var("i", "int32")
    big = tirx.decl_buffer((1 << 19,), "float32", name="Big")
    out = tirx.decl_buffer((4,), "float32", name="Out")
    body = tirx.For(
        i,
        0,
        4,
        tirx.ForKind.PARALLEL,
        tirx.SeqStmt(
            [
                tirx.AllocBuffer(big),
                tirx.BufferStore(big, tirx.const(1, "float32"), [i]),
                tirx.BufferStore(out, tirx.BufferLoad(big, [i]), [i]),
            ]
        ),
    )
    func = tirx.PrimFunc([out], body).with_attrs({"global_symbol": "f"})
    with pytest.raises(BlockLocalsTooLargeError, match="2097152 bytes"):
        build_prepared_c(tvm.IRModule({"f": func}), tmp_path)


def test_c_library_runs_under_tvm_ffi_alone(tmp_path: Path) -> None:
    # The C path needs no TVM context symbols: OpenMP runs the grid, block
    # tiles are stack arrays. A fresh process that never imports tvm runs it.
    import subprocess
    import sys

    result = build_prepared_c(tile_gemm_module(96, 80, 40, 32, 32, 16), tmp_path)
    script = f"""
import sys
import numpy as np
import tvm_ffi
kernel = tvm_ffi.load_module({str(result.library_path)!r})["main"]
rng = np.random.default_rng(0)
a = (rng.integers(-4, 5, (96, 40)) / 4).astype(np.float32)
b = (rng.integers(-4, 5, (40, 80)) / 4).astype(np.float32)
c = np.zeros((96, 80), np.float32)
kernel(*(tvm_ffi.from_dlpack(x) for x in (a, b, c)))
assert "tvm" not in sys.modules
assert np.array_equal(c, a @ b), float(np.abs(c - a @ b).max())
print("ok")
"""
    completed = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert completed.returncode == 0 and completed.stdout.strip() == "ok", completed.stderr


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    m=st.integers(1, 40),
    n=st.integers(1, 70),
    k=st.integers(1, 20),
    transpose_a=st.booleans(),
    block_k=st.sampled_from([4, 8, 16]),
)
def test_c_vector_extension_path_for_any_small_shape(
    m: int,
    n: int,
    k: int,
    transpose_a: bool,
    block_k: int,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    mod = tile_gemm_module(
        m, n, k, 16, 32, block_k, transpose_a=transpose_a, style="c-vector-extension"
    )
    result = build_prepared_c(mod, tmp_path_factory.mktemp("c"))
    _run_gemm(result, m, n, k, transpose_a)


@pytest.mark.parametrize("builder", [build_prepared_c, build_llvm])
def test_tvm_codegen_failure_is_a_toolchain_error(builder: object, tmp_path: Path) -> None:
    unbound = tirx.Var("unbound", "int32")
    out = tirx.decl_buffer((4,), "int32", name="Out")
    func = tirx.PrimFunc([out], tirx.BufferStore(out, unbound, [0]))
    mod = tvm.IRModule({"f": func.with_attrs({"global_symbol": "f"})})
    with pytest.raises(ToolchainError, match="code generation failed") as caught:
        builder(mod, tmp_path)  # type: ignore[operator]
    assert "unbound" in caught.value.output


def test_an_unprepared_parallel_loop_is_refused_naming_the_fix(tmp_path: Path) -> None:
    # Printed as is, the grid loop would run serially: the C path refuses it.
    mod = tile_gemm_module(32, 32, 16, 16, 16, 16)
    with pytest.raises(ValueError, match=r"unmarked parallel loop over \w+ in main.*prepare_for_c"):
        generate_c_source(mod)
    with pytest.raises(ValueError, match=r"build_c mod: expected a module prepared for C"):
        build_c(mod, tmp_path)
    assert "#pragma omp parallel for" in generate_c_source(prepare_for_c(mod))


def test_the_c_preparation_stages_run_in_the_pipeline_and_show_in_ir_dumps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tl_ir.language as T
    from tl_backend_api import create_backend_context, lower_to_sources
    from tl_codegen_cpu import C_PIPELINE, C_PREPARATION_PASSES

    @T.prim_func
    def scale(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):  # type: ignore[no-untyped-def]
        with T.Kernel(4, threads=1) as bx:
            for i in T.Parallel(16):
                B[bx * 16 + i] = A[bx * 16 + i] * 2.0

    names = [p.name for p in C_PREPARATION_PASSES]
    assert names == [
        "cpu-stack-block-locals",
        "cpu-mark-parallel-loops",
        "cpu-mark-independent-loops",
        "cpu-float16-bits",
        "cpu-exact-float-constants",
    ]
    assert C_PIPELINE.stage_names[-5:] == tuple(names)
    monkeypatch.setenv("TL_DUMP_IR", str(tmp_path))
    sources = lower_to_sources(create_backend_context("c"), scale)
    dumped = sorted(p.name for p in (tmp_path / C_PIPELINE.name).iterdir())
    last = len(C_PIPELINE.stage_names)
    assert dumped[-5:] == [
        f"{last - 4:02d}-cpu-stack-block-locals.tir",
        f"{last - 3:02d}-cpu-mark-parallel-loops.tir",
        f"{last - 2:02d}-cpu-mark-independent-loops.tir",
        f"{last - 1:02d}-cpu-float16-bits.tir",
        f"{last:02d}-cpu-exact-float-constants.tir",
    ]
    assert PARALLEL_FOR_MARKER in (tmp_path / C_PIPELINE.name / dumped[-4]).read_text()
    assert "#pragma omp parallel for" in sources.files["kernel.c"]
    assert "#pragma GCC ivdep" in sources.files["kernel.c"]
