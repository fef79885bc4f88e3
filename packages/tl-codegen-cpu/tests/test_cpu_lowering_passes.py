"""Unit tests of the lowering passes on small kernels: the IR each pass produces."""

from __future__ import annotations

from typing import Any

import pytest
import tvm
import tvm_ffi
from cpu_passes_testing import make_pass
from tvm import tirx

import tl_ir.language as T
from tl_codegen_cpu.passes import (
    CpuLegalizeHalfPrecisionPass,
    CpuLocalizeTilesPass,
    CpuLowerLaunchPass,
    CpuLowerParallelLoopsPass,
    CpuLowerTileOpsPass,
    CpuRejectGpuOpsPass,
)
from tl_ir.errors import UnsupportedError
from tl_ir.ops import is_tile_op
from tl_passes import LowerAllocVarPass, LowerPipelinedLoopsPass, PassContext, Pipeline

LLVM = tvm.target.Target("llvm")
C = tvm.target.Target("c")


def _module(func: Any) -> tvm.IRModule:
    return tvm.IRModule({"main": func.with_attr("global_symbol", "main")})


def _walk(mod: tvm.IRModule, node_type: Any) -> list[Any]:
    found: list[Any] = []
    tvm_ffi.structural_walk(mod["main"].body, (node_type, found.append), order="pre")
    return found


def _scopes(mod: tvm.IRModule) -> list[str]:
    return [str(a.buffer.ty.storage_scope) or "global" for a in _walk(mod, tirx.AllocBuffer)]


def _tile_ops(mod: tvm.IRModule) -> list[Any]:
    return [c for c in _walk(mod, tvm.ir.Call) if is_tile_op(c)]


def gemm_func(M: int = 40, N: int = 24, K: int = 20, dtype: str = "float32") -> Any:
    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), "float32")
    ):
        with T.Kernel(T.ceildiv(N, 16), T.ceildiv(M, 16), threads=128) as (bx, by):
            A_s = T.alloc_shared((16, 8), dtype)
            B_s = T.alloc_shared((8, 16), dtype)
            C_l = T.alloc_fragment((16, 16), "float32")
            T.clear(C_l)
            for ko in T.Pipelined(T.ceildiv(K, 8), num_stages=3):
                T.copy(A[by * 16, ko * 8], A_s)
                T.copy(B[ko * 8, bx * 16], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * 16, bx * 16])

    return main


def scan_func() -> Any:
    @T.prim_func
    def main(A: T.Tensor((8, 4), "float32"), B: T.Tensor((8, 4), "float32")):
        with T.Kernel(2, threads=4) as bx:
            tx = T.get_thread_binding(0)
            row = bx * 4 + tx
            acc = T.alloc_var("float32", init=0)
            for j in T.serial(4):
                acc = acc + A[row, j]
                B[row, j] = acc

    return main


def scan_with_tile_op_func() -> Any:
    @T.prim_func
    def main(A: T.Tensor((8, 4), "float32"), B: T.Tensor((8, 4), "float32")):
        with T.Kernel(2, threads=4) as bx:
            tx = T.get_thread_binding(0)
            tile = T.alloc_fragment((4, 4), "float32")
            T.copy(A[bx * 4, 0], tile)
            B[bx * 4 + tx, 0] = tile[tx, 0]

    return main


def parallel_func() -> Any:
    @T.prim_func
    def main(A: T.Tensor((8, 32), "float16"), B: T.Tensor((8, 32), "float16")):
        with T.Kernel(1, threads=32) as bx:
            tile = T.alloc_fragment((8, 32), "float16")
            T.copy(A[bx * 8, 0], tile)
            for i, j in T.Parallel(8, 32):
                tile[i, j] = tile[i, j] * tile[i, j] + T.float16(1)
            T.copy(tile, B[bx * 8, 0])

    return main


def test_lower_pipelined_loops_drops_the_annotations_and_keeps_a_serial_loop() -> None:
    mod = LowerPipelinedLoopsPass().run(_module(gemm_func()), PassContext())
    loops = _walk(mod, tirx.For)
    assert loops and all(loop.kind == tirx.ForKind.SERIAL for loop in loops)
    assert all("num_stages" not in (loop.annotations or {}) for loop in loops)
    assert all("tl.loop_kind" not in (loop.annotations or {}) for loop in loops)


def test_lower_alloc_var_moves_scalars_to_local_scope() -> None:
    before = _module(scan_func())
    assert "local.var" in _scopes(before)
    after = LowerAllocVarPass().run(before, PassContext())
    assert "local.var" not in _scopes(after)
    assert "local" in _scopes(after)


def test_cpu_lower_launch_fuses_the_grid_into_one_parallel_loop() -> None:
    mod = CpuLowerLaunchPass().run(_module(gemm_func()), PassContext(target=LLVM))
    assert not _walk(mod, tirx.AttrStmt)
    parallel = [f for f in _walk(mod, tirx.For) if f.kind == tirx.ForKind.PARALLEL]
    assert len(parallel) == 1
    # ceildiv(24, 16) * ceildiv(40, 16) blocks, bx fastest.
    assert int(tvm.sym.Analyzer().simplify(parallel[0].extent)) == 2 * 3
    assert "floormod" in mod.script() or "%" in mod.script()


def test_cpu_lower_launch_puts_thread_index_code_in_a_loop_over_threads() -> None:
    mod = CpuLowerLaunchPass().run(_module(scan_func()), PassContext(target=C))
    loops = _walk(mod, tirx.For)
    assert loops[0].kind == tirx.ForKind.PARALLEL and int(loops[0].extent) == 2
    assert loops[1].kind == tirx.ForKind.SERIAL and int(loops[1].extent) == 4
    assert str(loops[1].loop_var.name) == "tx"


def test_cpu_lower_launch_runs_the_tile_op_once_between_the_thread_loops() -> None:
    lowered = CpuLowerLaunchPass().run(_module(scan_with_tile_op_func()), PassContext(target=C))
    text = lowered.script()
    # The copy (all threads together) sits between nothing and the per-thread store:
    # one thread loop after it, the copy itself outside any thread loop.
    # (The thread loop carries its tl.cpu_thread_path annotation: "for tx in T.serial(4, ...".)
    assert text.count("for tx in T.serial(4") == 1
    assert text.index("T.copy(") < text.index("for tx in T.serial(4")


@pytest.mark.parametrize(("target", "expect_vector_extension"), [(LLVM, False), (C, True)])
def test_cpu_lower_tile_ops_leaves_no_tile_op(target: Any, expect_vector_extension: bool) -> None:
    mod = _module(gemm_func())
    assert _tile_ops(mod)
    lowered = CpuLowerTileOpsPass().run(mod, PassContext(target=target))
    assert _tile_ops(lowered) == []
    text = lowered.script()
    # K = 20 is ragged in block_K = 8: the source copy pads with zeros.
    assert "if_then_else" in text
    assert ("tl_gemm_f32x" in text) is expect_vector_extension


def test_cpu_lower_tile_ops_rejects_an_unknown_style() -> None:
    with pytest.raises(ValueError, match="gemm_style"):
        CpuLowerTileOpsPass(gemm_style="fast")


def test_cpu_lower_parallel_loops_vectorizes_the_innermost_loop() -> None:
    mod = CpuLowerParallelLoopsPass().run(_module(parallel_func()), PassContext(target=LLVM))
    kinds = {str(f.loop_var.name): f.kind for f in _walk(mod, tirx.For)}
    assert kinds["j"] == tirx.ForKind.VECTORIZED
    assert kinds["i"] == tirx.ForKind.SERIAL
    assert "tl.loop_kind" not in mod.script()


def test_cpu_lower_parallel_loops_keeps_branchy_loops_serial() -> None:
    @T.prim_func
    def main(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=16) as bx:
            for i in T.Parallel(16):
                if A[i] > 0:
                    A[i] = A[i] + T.float32(bx)

    mod = CpuLowerParallelLoopsPass().run(_module(main), PassContext(target=LLVM))
    assert all(f.kind != tirx.ForKind.VECTORIZED for f in _walk(mod, tirx.For))


def test_cpu_localize_tiles_makes_every_tile_global() -> None:
    mod = _module(gemm_func())
    assert set(_scopes(mod)) == {"shared.dyn", "local.fragment"}
    assert set(_scopes(CpuLocalizeTilesPass().run(mod, PassContext()))) == {"global"}


def test_legalize_half_precision_computes_in_float32() -> None:
    mod = _module(parallel_func())
    legal = CpuLegalizeHalfPrecisionPass().run(mod, PassContext())
    float_ops = [op for op in _walk(legal, (tirx.Add, tirx.Mul)) if "float" in str(op.ty.dtype)]
    assert len(float_ops) == 2
    assert all(str(op.ty.dtype) == "float32" for op in float_ops)
    # Untouched when the dtype is not listed.
    same = CpuLegalizeHalfPrecisionPass(dtypes=("bfloat16",)).run(mod, PassContext())
    assert any(str(a.ty.dtype) == "float16" for a in _walk(same, tirx.Add))


def test_cpu_reject_gpu_ops_names_the_construct_and_target() -> None:
    buffer = tirx.decl_buffer((4,), "float32", name="A")
    sync = tirx.Evaluate(tirx.call_intrin("int32", "tirx.tvm_storage_sync", "global"))
    func = tirx.PrimFunc([buffer], sync)
    with pytest.raises(UnsupportedError, match=r"grid-wide T\.sync_threads"):
        CpuRejectGpuOpsPass().run(_module(func), PassContext(target=C))
    # A block barrier is kept: cpu-lower-launch splits the thread loops there.
    block_sync = tirx.Evaluate(tirx.call_intrin("int32", "tirx.tvm_storage_sync", "shared"))
    kept = _module(tirx.PrimFunc([buffer], block_sync))
    assert CpuRejectGpuOpsPass().run(kept, PassContext(target=C)) is kept
    fine = _module(gemm_func())
    assert CpuRejectGpuOpsPass().run(fine, PassContext(target=C)) is fine


def test_the_new_passes_are_registered_under_their_names() -> None:
    for name in (
        "lower-pipelined-loops",
        "lower-alloc-var",
        "cpu-legalize-half-precision",
        "cpu-lower-warp-shuffles",
        "cpu-reject-gpu-ops",
        "cpu-lower-launch",
        "cpu-lower-tile-ops",
        "cpu-lower-parallel-loops",
        "cpu-localize-tiles",
        "cpu-split-vector-loops",
    ):
        assert make_pass(name).name == name


def test_the_full_cpu_pipeline_dumps_ir_after_every_pass(tmp_path: Any) -> None:
    passes = tuple(
        make_pass(n)
        for n in (
            "lower-pipelined-loops",
            "lower-alloc-var",
            "cpu-lower-launch",
            "cpu-lower-tile-ops",
            "cpu-lower-parallel-loops",
            "cpu-localize-tiles",
        )
    )
    Pipeline("test", passes).run(_module(gemm_func()), LLVM, dump_dir=tmp_path)
    dumped = {path.name for path in tmp_path.glob("*.tir")}
    for pass_ in passes:
        assert any(name.endswith(f"-{pass_.name}.tir") for name in dumped), (pass_.name, dumped)


def test_cpu_split_vector_loops_cuts_long_vector_loops_into_register_chunks() -> None:
    from tl_codegen_cpu.lowering import VectorISA
    from tl_codegen_cpu.passes import CpuSplitVectorLoopsPass
    from tl_codegen_cpu.passes.split_vector_loops import split_vector_loops

    a = tirx.decl_buffer((96,), "float32", name="A")
    i = tirx.Var("i", "int32")
    store = tirx.BufferStore(a, tirx.BufferLoad(a, [i]) + tirx.const(1.0, "float32"), [i])
    loop = tirx.For(i, 0, 96, tirx.ForKind.VECTORIZED, store)
    split = split_vector_loops(loop, VectorISA(vector_bits=512))
    assert isinstance(split, tirx.For) and split.kind == tirx.ForKind.SERIAL
    assert int(split.extent) == 6
    assert split.body.kind == tirx.ForKind.VECTORIZED and int(split.body.extent) == 16
    ragged = split_vector_loops(
        tirx.For(i, 0, 40, tirx.ForKind.VECTORIZED, store), VectorISA(vector_bits=512)
    )
    assert ragged.kind == tirx.ForKind.SERIAL and int(ragged.extent) == 40
    short = tirx.For(i, 0, 16, tirx.ForKind.VECTORIZED, store)
    assert split_vector_loops(short, VectorISA(vector_bits=512)).same_as(short)
    assert CpuSplitVectorLoopsPass().name == "cpu-split-vector-loops"


def test_cpu_legalize_intrinsics_rewrites_what_the_c_printer_lacks() -> None:
    from tl_codegen_cpu.passes import CpuLegalizeIntrinsicsPass

    a = tirx.decl_buffer((4,), "float32", name="A")
    x = tirx.BufferLoad(a, [0])
    body = tirx.SeqStmt(
        [
            tirx.BufferStore(a, tirx.abs(x), [0]),
            tirx.BufferStore(a, tirx.exp2(x), [1]),
            tirx.BufferStore(a, tirx.exp10(x), [2]),
        ]
    )
    mod = _module(tirx.PrimFunc([a], body))
    legal = CpuLegalizeIntrinsicsPass().run(mod, PassContext(target=C))
    names = {str(c.op.name) for c in _walk(legal, tvm.ir.Call) if isinstance(c.op, tvm.ir.Op)}
    assert not names & {"tirx.fabs", "tirx.exp2", "tirx.exp10"}
    assert "tirx.reinterpret" in names  # abs clears the sign bit (abs(-0.0) is +0.0)
    tvm.compile(legal, target="c")  # TVM's C printer accepts the result
    # LLVM prints fabs and exp2 itself; its exp10 (exp(x * ln 10)) is 67 ulp off.
    on_llvm = CpuLegalizeIntrinsicsPass().run(mod, PassContext(target=LLVM))
    names = {str(c.op.name) for c in _walk(on_llvm, tvm.ir.Call) if isinstance(c.op, tvm.ir.Op)}
    assert {"tirx.fabs", "tirx.exp2"} <= names and "tirx.exp10" not in names


def test_every_cpu_registry_key_equals_the_pass_name() -> None:
    from tl_codegen_cpu.passes import CPU_PASS_REGISTRY, create_cpu_pass
    from tl_passes import Pass
    from tl_passes.registry import PASS_REGISTRY

    assert not set(CPU_PASS_REGISTRY) & set(PASS_REGISTRY)
    for key in CPU_PASS_REGISTRY.names():
        cls = CPU_PASS_REGISTRY.get_class(key)
        assert cls.name == key and isinstance(create_cpu_pass(key), Pass)
    with pytest.raises(KeyError, match="unknown pass name 'simplify'; registered passes: cpu-"):
        create_cpu_pass("simplify")
