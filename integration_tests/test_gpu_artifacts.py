"""GPU artifacts without a GPU, validated from the manifest alone.

Every suite kernel through build_artifact on the cuda ``source`` execution backend (no
compiler, no adapter: loading says it holds source only and names what would run it);
and a two-kernel kernel (consecutive ``T.Kernel`` launches, a symbolic dim, a global
workspace) built by nvcc through the ``cubin`` spec (asked for by its TileLang name
``tvm_ffi``) and by the ``source`` spec, whose manifests must describe every launch:
the CUDA launcher loads the cubin and launches both kernels against a recording driver
with nothing but the manifest to go on.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tl_ir.language as T
import tl_runtime
from integration_tests.kernels import ALL_KERNELS, load
from tl_backend_api import build_artifact, create_backend_context
from tl_backend_api.descriptors import clear_availability_cache

CUDA_TARGET = {"kind": "cuda", "arch": "sm_80"}


@pytest.mark.parametrize("name", ALL_KERNELS)
def test_source_only_cuda_artifact_has_what_the_launcher_needs(name: str, tmp_path: Path) -> None:
    from integration_tests.kernels.suite import build_case

    context = create_backend_context({"kind": "cuda", "arch": "sm_90"}, execution_backend="source")
    module = load(name)
    case = module.CASES[0]
    directory = build_case(context, module, case, tmp_path / name)
    manifest = tl_runtime.read_manifest(directory)
    assert manifest.adapter is None and manifest.execution_backend == "source"
    assert manifest.runnable_with == ("cubin", "nvrtc")
    assert manifest.library.endswith(".cu")
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        ["manifest.json", manifest.library]
    )
    (launch,) = manifest.launches
    assert launch.symbol == manifest.entry_symbol
    assert launch.block == (case["args"].get("threads", 128),)
    names = {p.name for p in manifest.params}
    for argument in launch.arguments:
        assert argument.name in names or argument.kind in ("dim", "workspace"), argument
    with pytest.raises(tl_runtime.SourceOnlyArtifactError, match="'cubin' or 'nvrtc'"):
        tl_runtime.load(directory)


def two_kernels() -> Any:
    """``B = 2 * A + 1`` over a symbolic ``n`` in two launches: the first writes a global
    workspace in blocks of 64, the second reads it in blocks of 128."""
    n = T.symbolic("n")

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        W = T.alloc_global((n,), "float32")
        with T.Kernel(T.ceildiv(n, 64), threads=64) as bx:
            for i in T.Parallel(64):
                if bx * 64 + i < n:
                    W[bx * 64 + i] = A[bx * 64 + i] * 2.0
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < n:
                    B[bx * 128 + i] = W[bx * 128 + i] + 1.0

    return main


@pytest.fixture
def cuda_launcher_present(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The cuda backend's probes answer yes (this machine has nvcc but no GPU), so the
    ``cubin`` spec resolves as it would on a GPU machine."""
    import tl_codegen_cuda.probes

    monkeypatch.setattr(
        tl_codegen_cuda.probes, "adapter_availability", lambda key: tl_runtime.Availability(True)
    )
    clear_availability_cache()
    yield
    clear_availability_cache()


class RecordingDriver:
    """Enough of cuda-python's driver for the launcher to load a module and launch: it
    records each launch (function, grid, block, shared bytes, argument values and types)
    and the sizes of the device allocations."""

    CUdevice_attribute = type(
        "Attributes",
        (),
        {
            "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR": 75,
            "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR": 76,
        },
    )
    CUfunction_attribute = type(
        "Attributes", (), {"CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES": 8}
    )

    def __init__(self, image: bytes) -> None:
        self.image = image
        self.launches: list[tuple[Any, ...]] = []
        self.allocations: list[int] = []

    def cuInit(self, flags: int) -> tuple[int]:
        return (0,)

    def cuDeviceGetCount(self) -> tuple[int, int]:
        return (0, 1)

    def cuDeviceGet(self, ordinal: int) -> tuple[int, int]:
        return (0, 0)

    def cuDevicePrimaryCtxRetain(self, device: Any) -> tuple[int, str]:
        return (0, "context")

    def cuDeviceGetAttribute(self, attribute: int, device: Any) -> tuple[int, int]:
        return (0, 8 if attribute == 75 else 0)

    def cuCtxSetCurrent(self, context: Any) -> tuple[int]:
        return (0,)

    def cuModuleLoadData(self, image: bytes) -> tuple[int, str]:
        assert image == self.image
        return (0, "module")

    def cuModuleGetFunction(self, module: Any, name: bytes) -> tuple[int, bytes]:
        # A symbol the cubin lacks would fail on a GPU: its string table must hold it.
        assert b"\x00" + name + b"\x00" in self.image, name
        return (0, name)

    def cuMemAlloc(self, nbytes: int) -> tuple[int, int]:
        self.allocations.append(nbytes)
        return (0, 4096 * len(self.allocations))

    def cuMemcpyHtoD(self, pointer: int, host: int, nbytes: int) -> tuple[int]:
        return (0,)

    def cuMemcpyDtoH(self, host: int, pointer: int, nbytes: int) -> tuple[int]:
        return (0,)

    def cuMemFree(self, pointer: int) -> tuple[int]:
        return (0,)

    def cuLaunchKernel(self, function: Any, *rest: Any) -> tuple[int]:
        values, types = rest[8]
        self.launches.append((function, rest[0:3], rest[3:6], rest[6], values, types))
        return (0,)

    def cuCtxSynchronize(self) -> tuple[int]:
        return (0,)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed here")
@pytest.mark.usefixtures("cuda_launcher_present")
def test_a_two_kernel_cubin_artifact_is_launched_from_its_manifest_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ctypes

    from tl_runtime_cuda import driver

    context = create_backend_context(CUDA_TARGET, execution_backend="tvm_ffi")
    assert context.execution_backend.name == "cubin"
    directory = build_artifact(context, two_kernels(), tmp_path / "two", out_idx=[-1])
    manifest = tl_runtime.read_manifest(directory)
    assert manifest.execution_backend == "cubin" and manifest.adapter == "cuda_driver"
    assert sorted(p.name for p in directory.iterdir()) == [
        "main.cu",
        "main.cubin",
        "manifest.json",
    ]
    first, second = manifest.launches
    assert (first.symbol, second.symbol) == ("main_kernel", "main_kernel_1")
    workspace = tl_runtime.LaunchArgument("workspace", "W", "float32", first.arguments[1].nbytes)
    assert [(a.kind, a.name) for a in first.arguments][:2] == [("buffer", "A"), ("workspace", "W")]
    assert workspace in second.arguments
    assert ("dim", "n") in {(a.kind, a.name) for a in first.arguments + second.arguments}
    n = 1000
    assert tl_runtime.evaluate_dim_expression(workspace.nbytes or 0, {"n": n}) == 4 * n
    assert first.resolve({"n": n})[:2] == ((16,), (64,))
    assert second.resolve({"n": n})[:2] == ((8,), (128,))

    # The launcher, given the artifact directory and nothing else.
    fake = RecordingDriver((directory / "main.cubin").read_bytes())
    monkeypatch.setattr(driver, "driver_module", lambda: fake)
    monkeypatch.setattr(driver.Device, "_instance", None)
    kernel = tl_runtime.load(directory)
    assert kernel.adapter == "cuda_driver"
    out = kernel(np.ones(n, np.float32))
    assert out.shape == (n,)
    (f1, grid1, block1, shared1, values1, types1), (f2, grid2, block2, _, values2, types2) = (
        fake.launches
    )
    assert (f1, grid1, block1, shared1) == (b"main_kernel", (16, 1, 1), (64, 1, 1), 0)
    assert (f2, grid2, block2) == (b"main_kernel_1", (8, 1, 1), (128, 1, 1))
    # One device allocation per array and one for the workspace, shared by both kernels.
    assert sorted(fake.allocations) == [4 * n, 4 * n, 4 * n]
    position = {a.name: i for i, a in enumerate(second.arguments)}
    assert values1[1] == values2[position["W"]]
    for launch, values, types in ((first, values1, types1), (second, values2, types2)):
        for argument, value, kind in zip(launch.arguments, values, types, strict=True):
            if argument.kind == "dim":
                assert (value, kind) == (n, ctypes.c_int32)


def test_the_source_spec_records_the_same_launches_without_a_compiler(tmp_path: Path) -> None:
    context = create_backend_context(CUDA_TARGET, execution_backend="source")
    directory = build_artifact(context, two_kernels(), tmp_path / "two", out_idx=[-1])
    manifest = tl_runtime.read_manifest(directory)
    assert [launch.symbol for launch in manifest.launches] == ["main_kernel", "main_kernel_1"]
    assert [f.path for f in manifest.files] == ["main.cu"]
    sources = context.emit_source(context.lower(_module(two_kernels())))
    assert [launch.kernel_name for launch in sources.launches] == [
        launch.symbol for launch in manifest.launches
    ]
    for written, emitted in zip(manifest.launches, sources.launches, strict=True):
        assert written.grid == emitted.grid and written.block == emitted.block
        assert [(a.kind, a.name, a.dtype, a.nbytes) for a in written.arguments] == [
            (a.kind, a.name, a.dtype, a.nbytes) for a in emitted.arguments
        ]


def _module(func: Any) -> Any:
    from tl_backend_api.artifact import kernel_module

    return kernel_module(func, "main")
