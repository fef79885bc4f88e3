"""CUDA codegen without a GPU: every kernel to CUDA C and cubins, the no-nvcc source path,
features per arch, artifacts, and the generated code run under a CPU emulation."""

from __future__ import annotations

import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tvm.target import Target

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import cuda_emulation as emu

from integration_tests.kernels import ALL_KERNELS, load
from tl_backend_api.artifact import kernel_module
from tl_codegen_cuda.backend import BACKEND
from tl_codegen_cuda.codegen import CudaDeviceCodegen
from tl_codegen_cuda.features import FEATURES

NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed here")
needs_gxx = pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")


def cuda_target(arch: str = "sm_80", **extra: Any) -> Target:
    return Target({"kind": "cuda", "arch": arch, **extra}, host=Target("llvm"))


def lowered(name: str, case_index: int, target: Target) -> Any:
    module = load(name)
    func = module.KERNEL(**module.CASES[case_index]["args"])
    return BACKEND.pipelines["cuda"].run(kernel_module(func, name), target)


def test_every_kernel_gives_cuda_with_entry_and_launch() -> None:
    codegen = CudaDeviceCodegen()
    for name in ALL_KERNELS:
        target = cuda_target()
        sources = codegen.emit_source(lowered(name, 0, target), target)
        text = sources.files[f"{name}.cu"]
        assert f'extern "C" __global__ void __launch_bounds__(128) {name}_kernel(' in text or (
            f"{name}_kernel(" in text and "__global__" in text
        ), name
        assert sources.entry_symbol == f"{name}_kernel"
        (launch,) = sources.launches
        assert launch.kernel_name == f"{name}_kernel"
        assert launch.block in ((128,), (load(name).CASES[0]["args"].get("threads", 128),))
        assert list(sources.files) == [f"{name}.cu"]  # the launch is no side file
        names = {p.name for p in load(name).KERNEL(**load(name).CASES[0]["args"]).params}
        for argument in launch.arguments:
            assert argument.name in names or argument.kind in ("dim", "workspace"), argument
        assert "tl.copy" not in text and "tl.gemm" not in text


@needs_nvcc
@pytest.mark.parametrize(
    "arch",
    [
        "sm_80",
        # Slow (~15 s of nvcc): the emitted source is the same for both archs (only ptxas's
        # target differs), and what sm_80 accepts sm_90 does too; the default run still
        # builds sm_90 cubins in test_build_gives_a_cubin_for_the_target_arch and
        # integration_tests/test_gpu_bundle.py.
        pytest.param("sm_90", marks=pytest.mark.slow),
    ],
)
def test_every_kernel_compiles_with_nvcc(arch: str, tmp_path: Path) -> None:
    jobs = []
    for name in ALL_KERNELS:
        target = cuda_target(arch)
        sources = CudaDeviceCodegen().emit_source(lowered(name, 0, target), target)
        source = tmp_path / f"{name}_{arch}.cu"
        source.write_text(sources.files[f"{name}.cu"])
        jobs.append((source, arch))

    def compile_one(job: tuple[Path, str]) -> tuple[str, int, str]:
        source, arch = job
        out = source.with_suffix(".cubin")
        done = subprocess.run(
            [str(NVCC), "-cubin", f"-arch={arch}", "-O3", "-o", str(out), str(source)],
            capture_output=True,
            text=True,
            check=False,
        )
        return source.name, done.returncode, done.stderr[-2000:]

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(compile_one, jobs))
    failures = [r for r in results if r[1] != 0]
    assert failures == []
    assert len(results) == len(ALL_KERNELS)


@needs_nvcc
def test_build_gives_a_cubin_for_the_target_arch() -> None:
    target = cuda_target("sm_90")
    result = CudaDeviceCodegen().build(lowered("softmax", 0, target), target)
    cubin = result.binaries["softmax.cubin"]
    assert cubin[:4] == b"\x7fELF"
    assert "nvcc" in result.toolchain_versions
    assert result.compiled


def test_emit_source_never_runs_nvcc(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"a process was started: {args!r}")

    monkeypatch.setattr(subprocess, "run", refuse)
    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setenv("PATH", "/nonexistent")
    target = cuda_target()
    sources = CudaDeviceCodegen().emit_source(lowered("gemm", 0, target), target)
    assert sources.files["gemm.cu"]


def test_build_without_nvcc_raises_toolchain_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from tl_backend_api import ToolchainError

    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.delenv("TL_NVCC", raising=False)
    target = cuda_target()
    with pytest.raises(ToolchainError, match="nvcc not found"):
        CudaDeviceCodegen().build(lowered("softmax", 0, target), target)


def test_features_follow_the_arch() -> None:
    table = {
        "sm_70": {"tensor_cores"},
        "sm_80": {"tensor_cores", "async_copy"},
        "sm_89": {"tensor_cores", "async_copy", "fp8"},
        "sm_90": {"tensor_cores", "async_copy", "fp8", "tma", "wgmma"},
        "sm_100": {"tensor_cores", "async_copy", "fp8", "tma"},
    }
    for arch, expected in table.items():
        target = Target({"kind": "cuda", "arch": arch})
        got = {name for name, predicate in FEATURES.items() if predicate(target)}
        assert got == expected, arch
        float_dtypes = BACKEND.capabilities_for(target).float_dtypes
        assert (float_dtypes is None) == ("fp8" in expected), arch


def test_launch_metadata_keeps_symbolic_grid_and_dynamic_shared_memory() -> None:
    target = cuda_target()
    sources = CudaDeviceCodegen().emit_source(lowered("symbolic_scale", 0, target), target)
    (launch,) = sources.launches
    assert launch.grid == ("(((M - 1) // 32) + 1)",)
    kinds = {a.name: a.kind for a in launch.arguments}
    assert kinds == {"A": "buffer", "B": "buffer", "M": "dim", "alpha": "scalar"}
    gemm = CudaDeviceCodegen().emit_source(lowered("gemm", 0, target), target)
    # A_shared 64x32 fp16 + B_shared 32x64 fp16, each a ring of num_stages=3 slots.
    assert gemm.launches[0].dynamic_shared_memory_bytes == 3 * 2 * 64 * 32 * 2


def test_artifact_holds_cubin_launch_and_refuses_to_load_without_cuda_python(
    tmp_path: Path,
) -> None:
    if NVCC is None:
        pytest.skip("nvcc is not installed here")
    import tl_runtime
    from tl_backend_api.artifact import build_artifact
    from tl_backend_api.context import BackendContext

    target = Target({"kind": "cuda", "arch": "sm_80"}, host=Target("llvm"))
    context = BackendContext(
        backend=BACKEND,
        target=target,
        target_host=Target("llvm"),
        execution_backend=BACKEND.execution_backend("cubin"),
    )
    module = load("symbolic_scale")
    func = module.KERNEL(**module.CASES[0]["args"])
    directory = build_artifact(
        context, func, tmp_path / "art", out_idx=module.OUT_IDX, kernel_name="symbolic_scale"
    )
    manifest = tl_runtime.read_manifest(directory)
    assert manifest.library == "symbolic_scale.cubin"
    assert manifest.adapter == "cuda_driver"
    (launch,) = manifest.launches
    assert launch.symbol == "symbolic_scale_kernel"
    assert launch.resolve({"M": 70})[0] == (3,)
    assert [(a.kind, a.name) for a in launch.arguments] == [
        (argument.kind, argument.name)
        for argument in CudaDeviceCodegen()
        .emit_source(lowered("symbolic_scale", 0, target), target)
        .launches[0]
        .arguments
    ]
    if not tl_runtime.adapter_availability("cuda_driver").available:
        with pytest.raises(tl_runtime.AdapterUnavailableError, match=r"cuda-python|CUDA"):
            tl_runtime.load(directory)


def _emulate(name: str, case_index: int, target: Target) -> list[str]:
    module = load(name)
    case = module.CASES[case_index]
    func = module.KERNEL(**case["args"])
    mod = BACKEND.pipelines["cuda"].run(kernel_module(func, name), target)
    sources = CudaDeviceCodegen().emit_source(mod, target)
    (launch,) = sources.launches
    library = emu.compile_emulation(sources.files[f"{name}.cu"], launch, emu.scratch_dir())
    inputs = iter(module.make_inputs(case, np.random.default_rng(0)))
    outputs = {i % len(func.params) for i in module.OUT_IDX}
    values: dict[str, Any] = {}
    bindings: dict[str, int] = {}
    for index, param in enumerate(func.params):
        if index in outputs:
            continue
        value = next(inputs)
        values[str(param.name)] = np.ascontiguousarray(value) if hasattr(value, "shape") else value
        for dim, size in zip(getattr(param.ty, "shape", ()), np.shape(value), strict=False):
            if not hasattr(dim, "value"):
                bindings[str(dim.name)] = int(size)
    for index, param in enumerate(func.params):
        if index in outputs:
            shape = tuple(
                int(d.value) if hasattr(d, "value") else bindings[str(d.name)]
                for d in param.ty.shape
            )
            values[str(param.name)] = np.zeros(shape, dtype=str(param.ty.dtype))
    originals = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in values.items()}
    from tl_runtime import evaluate_dim_expression

    grid = tuple(evaluate_dim_expression(d, bindings) for d in launch.grid)
    block = tuple(evaluate_dim_expression(d, bindings) for d in launch.block)
    emu.run_emulated(library, launch, grid, block, {**values, **bindings})
    callers = [originals[str(p.name)] for i, p in enumerate(func.params) if i not in outputs]
    expected = module.REFERENCE(case, *callers)
    problems = []
    for key, want in expected.items():
        tolerance = module.TOLERANCE.get(str(want.dtype), 1e-4)
        got = values[key].astype(np.float64)
        if not np.allclose(got, want.astype(np.float64), rtol=tolerance, atol=tolerance):
            problems.append(f"{name}[{case_index}] {key}: max error {np.max(np.abs(got - want))}")
    return problems


#: One case per kernel, plus the fp16 GEMM and a ragged fp16 elementwise case.
EMULATED = [
    ("gemm", 0),
    ("elementwise_add", 2),
    ("gemm", 2),
    ("gemm_transposed", 2),
    ("elementwise_add", 1),
    ("softmax", 1),
    ("rms_norm", 1),
    ("column_reduce", 2),
    ("symbolic_scale", 2),
    ("two_outputs", 1),
    ("atomic_sum", 1),
    ("serial_scan", 1),
    ("tile_cumsum", 2),
    ("tile_cumsum", 1),
]


@needs_gxx
@pytest.mark.parametrize(("name", "index"), EMULATED, ids=[f"{n}-{i}" for n, i in EMULATED])
def test_generated_cuda_matches_reference_under_cpu_emulation(name: str, index: int) -> None:
    assert _emulate(name, index, cuda_target()) == []


@needs_gxx
@pytest.mark.parametrize("name", ["softmax", "column_reduce"])
def test_shared_memory_reduction_path_matches_reference(name: str) -> None:
    # thread_warp_size 1 turns warp shuffles off: partials combine through a shared table.
    target = cuda_target(thread_warp_size=1)
    mod = lowered(name, 1, target)
    text = CudaDeviceCodegen().emit_source(mod, target).files[f"{name}.cu"]
    assert "__shfl_sync(" not in text.split('extern "C" __global__')[-1]
    assert _emulate(name, 1, target) == []


@needs_gxx
def test_annotated_fragment_layout_runs_correctly_under_emulation() -> None:
    import tl_ir.language as T

    @T.prim_func
    def main(A: T.Tensor((64, 32), "float32"), B: T.Tensor((64, 32), "float32")):
        with T.Kernel(1, threads=128) as _bx:
            frag = T.alloc_fragment((64, 32), "float32")
            T.annotate_layout({frag: lambda i, j: ((i * 32 + j) % 128, (i * 32 + j) // 128)})
            T.copy(A[0, 0], frag)
            for i, j in T.Parallel(64, 32):
                frag[i, j] = frag[i, j] * 2.0
            T.copy(frag, B[0, 0])

    target = cuda_target()
    mod = BACKEND.pipelines["cuda"].run(kernel_module(main, "annotated"), target)
    assert str(mod["annotated"].attrs["tl.gpu_fragment_layouts"]["frag"]).startswith("annotated")
    sources = CudaDeviceCodegen().emit_source(mod, target)
    library = emu.compile_emulation(
        sources.files["annotated.cu"], sources.launches[0], emu.scratch_dir()
    )
    a = np.random.default_rng(1).random((64, 32), dtype=np.float32)
    b = np.zeros_like(a)
    emu.run_emulated(library, sources.launches[0], (1,), (128,), {"A": a, "B": b})
    np.testing.assert_array_equal(b, 2 * a)


def test_global_to_shared_copies_move_128_bit_vectors() -> None:
    def kernel(case: int, arch: str) -> str:
        target = cuda_target(arch)
        sources = CudaDeviceCodegen().emit_source(lowered("gemm", case, target), target)
        return sources.files["gemm.cu"].split('extern "C" __global__')[-1]

    # sm_75 has no cp.async: the pipelined loop runs in order with 128-bit copies.
    assert "*(uint4*)" in kernel(0, "sm_75")  # 8 halves per access
    assert "float4" in kernel(2, "sm_75")
    # sm_80: 16-byte cp.async into the ring, fp16 and fp32 alike.
    for case in (0, 2):
        assert "tl_cp_async_16(" in kernel(case, "sm_80")
    # N = 31 is not a multiple of 4: scalar copies.
    target = cuda_target()
    ragged = CudaDeviceCodegen().emit_source(lowered("two_outputs", 1, target), target)
    assert "float4" not in ragged.files["two_outputs.cu"].split('extern "C" __global__')[-1]


@needs_gxx
def test_tier2_warp_functions_run_correctly_under_emulation() -> None:
    import tl_ir.language as T
    from tl_codegen_cuda import language as G

    @T.prim_func
    def main(
        A: T.Tensor((128,), "float32"),
        S: T.Tensor((128,), "float32"),
        D: T.Tensor((128,), "float32"),
        L: T.Tensor((128,), "int32"),
    ):
        with T.Kernel(1, threads=128) as _bx:
            tx = T.get_thread_binding(0)
            v = T.alloc_var("float32", init=0)
            v = A[tx]
            S[tx] = G.warp_reduce_sum(v)
            D[tx] = G.shfl_down(v, 1)
            G.sync_threads()
            L[tx] = G.get_warp_idx() * 100 + G.get_lane_idx()

    target = cuda_target()
    mod = BACKEND.pipelines["cuda"].run(kernel_module(main, "tier2"), target)
    sources = CudaDeviceCodegen().emit_source(mod, target)
    text = sources.files["tier2.cu"]
    assert "__shfl_sync" in text and "__shfl_down_sync" in text and "__syncthreads()" in text
    library = emu.compile_emulation(text, sources.launches[0], emu.scratch_dir())
    a = np.arange(128, dtype=np.float32)
    s, d = np.zeros_like(a), np.zeros_like(a)
    lanes = np.zeros(128, dtype=np.int32)
    emu.run_emulated(
        library,
        sources.launches[0],
        (1,),
        (128,),
        {"A": a, "S": s, "D": d, "L": lanes},
    )
    np.testing.assert_array_equal(s, np.repeat(a.reshape(4, 32).sum(axis=1), 32))
    np.testing.assert_array_equal(lanes, (np.arange(128) // 32) * 100 + np.arange(128) % 32)
    within = np.arange(128) % 32 != 31
    np.testing.assert_array_equal(d[within], a[within] + 1)


@needs_nvcc
def test_a_target_without_a_supported_arch_gets_a_fatbin_with_ptx() -> None:
    target = Target("cuda", host=Target("llvm"))  # TVM says sm_50 without a GPU
    result = CudaDeviceCodegen().build(lowered("elementwise_add", 0, target), target)
    assert list(result.binaries) == ["elementwise_add.fatbin"]
    assert result.binaries["elementwise_add.fatbin"]


@needs_gxx
def test_copy_between_differently_placed_fragments_goes_through_shared_memory() -> None:
    import tl_ir.language as T

    @T.prim_func
    def main(A: T.Tensor((16, 8), "float32"), B: T.Tensor((16, 8), "float32")):
        with T.Kernel(1, threads=32) as _bx:
            x = T.alloc_fragment((16, 8), "float32")
            y = T.alloc_fragment((16, 8), "float32")
            T.annotate_layout(
                {y: lambda i, j: ((i * 8 + j) // 4 % 32, (i * 8 + j) // 128 * 4 + j % 4)}
            )
            T.copy(A[0, 0], x)
            for i, j in T.Parallel(16, 8):
                x[i, j] = x[i, j] + 1.0
            T.copy(x, y)
            T.copy(y, B[0, 0])

    target = cuda_target()
    mod = BACKEND.pipelines["cuda"].run(kernel_module(main, "convert"), target)
    sources = CudaDeviceCodegen().emit_source(mod, target)
    assert "x_staging" in sources.files["convert.cu"]
    library = emu.compile_emulation(
        sources.files["convert.cu"], sources.launches[0], emu.scratch_dir()
    )
    a = np.random.default_rng(2).random((16, 8), dtype=np.float32)
    b = np.zeros_like(a)
    emu.run_emulated(library, sources.launches[0], (1,), (32,), {"A": a, "B": b})
    np.testing.assert_array_equal(b, a + 1)


def _nvrtc_usable() -> bool:
    try:
        from tl_runtime_cuda.driver import nvrtc_module
    except ImportError:  # the CUDA launcher plug-in is not installed
        return False
    module = nvrtc_module()
    if module is None:
        return False
    try:
        module.nvrtcVersion()
    except Exception:  # libnvrtc missing
        return False
    return True


@pytest.mark.skipif(not _nvrtc_usable(), reason="cuda-python's NVRTC (and libnvrtc) is absent")
def test_nvrtc_compiles_every_kernel_for_sm90() -> None:
    from tl_runtime_cuda.driver import compile_with_nvrtc

    target = cuda_target("sm_90")
    for name in ALL_KERNELS:
        source = CudaDeviceCodegen().emit_source(lowered(name, 0, target), target)
        image = compile_with_nvrtc(source.files[f"{name}.cu"].encode(), f"{name}.cu", "sm_90")
        assert image[:4] == b"\x7fELF", name


def test_the_pipeline_lowers_with_this_packages_traits() -> None:
    from tl_codegen_cuda.backend import BACKEND as backend
    from tl_codegen_cuda.traits import CUDA_TRAITS
    from tl_passes.gpu import GpuLowerTileOpsPass, GpuPlanSharedMemoryPass, SharedMemoryModel

    stages = backend.pipelines["cuda"].stages
    (lowering,) = [s for s in stages if isinstance(s, GpuLowerTileOpsPass)]
    assert lowering.traits is CUDA_TRAITS
    (planning,) = [s for s in stages if isinstance(s, GpuPlanSharedMemoryPass)]
    assert planning.static is (CUDA_TRAITS.shared_memory is SharedMemoryModel.STATIC)
