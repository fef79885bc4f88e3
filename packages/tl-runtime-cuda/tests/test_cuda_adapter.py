"""The CUDA-driver adapter (key ``cuda_driver``, registered by tl-runtime-cuda): probes
without cuda-python, and the whole call path (argument order, launch dims, copies in and
back) from the manifest alone, against a fake driver module."""

from __future__ import annotations

import ctypes
import dataclasses
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tl_runtime
from tl_runtime import LaunchArgument, LaunchSpec, Manifest, ParamSpec, write_artifact
from tl_runtime_cuda import CudaDriverAdapter, driver


class FakeDriver(types.SimpleNamespace):
    """Just enough of ``cuda.bindings.driver``: memory is host bytearrays, and a launch of
    the kernel ``scale_kernel(float* A, float* B, int M, float alpha)`` runs in numpy."""

    def __init__(self) -> None:
        super().__init__()
        self.memory: dict[int, bytearray] = {}
        self.launches: list[tuple[Any, ...]] = []
        self.CUdevice_attribute = types.SimpleNamespace(
            CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR=75,
            CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR=76,
        )
        self.CUfunction_attribute = types.SimpleNamespace(
            CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES=8
        )

    def cuInit(self, flags: int) -> tuple[int]:
        return (0,)

    def cuDeviceGetCount(self) -> tuple[int, int]:
        return (0, 1)

    def cuDeviceGet(self, ordinal: int) -> tuple[int, str]:
        return (0, "device0")

    def cuDevicePrimaryCtxRetain(self, device: Any) -> tuple[int, str]:
        return (0, "context")

    def cuDeviceGetAttribute(self, attribute: int, device: Any) -> tuple[int, int]:
        return (0, 9 if attribute == 75 else 0)

    def cuCtxSetCurrent(self, context: Any) -> tuple[int]:
        return (0,)

    def cuModuleLoadData(self, image: bytes) -> tuple[int, bytes]:
        return (0, image)

    def cuModuleGetFunction(self, module: Any, name: bytes) -> tuple[int, bytes]:
        return (0, name)

    def cuMemAlloc(self, nbytes: int) -> tuple[int, int]:
        pointer = 4096 * (len(self.memory) + 1)
        self.memory[pointer] = bytearray(nbytes)
        return (0, pointer)

    def cuMemcpyHtoD(self, pointer: int, host: int, nbytes: int) -> tuple[int]:
        self.memory[pointer][:nbytes] = ctypes.string_at(host, nbytes)
        return (0,)

    def cuMemcpyDtoH(self, host: int, pointer: int, nbytes: int) -> tuple[int]:
        ctypes.memmove(host, bytes(self.memory[pointer][:nbytes]), nbytes)
        return (0,)

    def cuMemFree(self, pointer: int) -> tuple[int]:
        del self.memory[pointer]
        return (0,)

    def cuLaunchKernel(self, function: Any, *rest: Any) -> tuple[int]:
        grid, block, shared, stream = rest[0:3], rest[3:6], rest[6], rest[7]
        values, kinds = rest[8]
        self.launches.append((function, grid, block, shared, stream, kinds))
        a_ptr, b_ptr, m, alpha = values
        a = np.frombuffer(self.memory[a_ptr], dtype=np.float32)
        b = np.frombuffer(self.memory[b_ptr], dtype=np.float32)
        b[: m * 4] = a[: m * 4] * alpha
        return (0,)

    def cuCtxSynchronize(self) -> tuple[int]:
        return (0,)

    def cuGetErrorString(self, err: Any) -> tuple[int, bytes]:
        return (0, b"fake error")


SCALE_ARGUMENTS = (
    LaunchArgument("buffer", "A", "float32"),
    LaunchArgument("buffer", "B", "float32"),
    LaunchArgument("dim", "M", "int32"),
    LaunchArgument("scalar", "alpha", "float32"),
)


def scale_manifest(*launches: LaunchSpec, library: str = "scale.cubin") -> Manifest:
    """``scale(A[M, 4], alpha) -> B[M, 4]`` with the given launches (default: one)."""
    return Manifest(
        name="scale",
        entry_symbol="scale_kernel",
        params=(
            ParamSpec("A", "float32", shape=("M", 4)),
            ParamSpec("alpha", "float32", kind="scalar"),
            ParamSpec("B", "float32", shape=("M", 4), role="output"),
        ),
        target={"kind": "cuda", "arch": "sm_90"},
        library=library,
        out_idx=(2,),
        execution_backend="cubin",
        adapter="cuda_driver",
        argument_device_types=(2,),
        launches=launches
        or (
            LaunchSpec(
                "scale_kernel",
                grid=("((M + 31) // 32)",),
                block=(128,),
                arguments=SCALE_ARGUMENTS,
            ),
        ),
    )


def write_scale_artifact(directory: Path, *launches: LaunchSpec) -> Path:
    return write_artifact(directory, scale_manifest(*launches), {"scale.cubin": b"\x7fELF fake"})


def test_the_cuda_driver_key_is_this_packages_adapter() -> None:
    """tl-runtime finds the launcher through the tl.adapters entry point of tl-runtime-cuda."""
    import importlib.metadata

    assert tl_runtime.get_adapter("cuda_driver") is CudaDriverAdapter
    (point,) = [
        p
        for p in importlib.metadata.distribution("tl-runtime-cuda").entry_points
        if p.group == tl_runtime.ADAPTER_ENTRY_POINT_GROUP
    ]
    assert (point.name, point.value) == ("cuda_driver", "tl_runtime_cuda.adapter:CudaDriverAdapter")


def test_probe_without_cuda_python_says_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(driver, "driver_module", lambda: None)
    availability = CudaDriverAdapter.probe()
    assert not availability
    assert "cuda-python" in availability.reason


def test_loading_without_cuda_python_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(driver, "driver_module", lambda: None)
    directory = write_scale_artifact(tmp_path / "art")
    with pytest.raises(tl_runtime.AdapterUnavailableError, match="cuda-python"):
        tl_runtime.load(directory)


def test_call_path_against_a_fake_driver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeDriver()
    monkeypatch.setattr(driver, "driver_module", lambda: fake)
    monkeypatch.setattr(driver.Device, "_instance", None)
    kernel = tl_runtime.load(write_scale_artifact(tmp_path / "art"))
    a = np.arange(40 * 4, dtype=np.float32).reshape(40, 4)
    b = kernel(a, 1.5)
    np.testing.assert_array_equal(b, a * 1.5)
    function, grid, block, shared, _stream, kinds = fake.launches[-1]
    assert function == b"scale_kernel"
    assert grid == (2, 1, 1)
    assert block == (128, 1, 1)
    assert shared == 0
    assert kinds == (None, None, ctypes.c_int32, ctypes.c_float)
    assert fake.memory == {}, "device buffers are freed after the call"
    assert driver.Device.get().arch == "sm_90"


def test_cuda_c_is_compiled_with_nvrtc_for_the_devices_arch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ``nvrtc`` artifact keeps CUDA C; the launcher compiles it for the device's arch."""
    fake = FakeDriver()
    compiled: list[tuple[bytes, str, str]] = []

    def fake_nvrtc(source: bytes, name: str, arch: str) -> bytes:
        compiled.append((source, name, arch))
        return b"cubin from nvrtc"

    monkeypatch.setattr(driver, "driver_module", lambda: fake)
    monkeypatch.setattr(driver.Device, "_instance", None)
    monkeypatch.setattr(driver, "compile_with_nvrtc", fake_nvrtc)
    manifest = scale_manifest(library="scale.cu")
    directory = write_artifact(tmp_path / "art", manifest, {"scale.cu": b"__global__ ..."})
    kernel = tl_runtime.load(directory)
    assert compiled == [(b"__global__ ...", "scale.cu", "sm_90")]
    a = np.ones((8, 4), dtype=np.float32)
    np.testing.assert_array_equal(kernel(a, 2.0), a * 2)


def test_an_artifact_without_launches_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(driver, "driver_module", lambda: FakeDriver())
    monkeypatch.setattr(driver.Device, "_instance", None)
    draft = dataclasses.replace(scale_manifest(), launches=())
    directory = write_artifact(tmp_path / "art", draft, {"scale.cubin": b"x"})
    with pytest.raises(tl_runtime.ArtifactError, match="lists no launches"):
        tl_runtime.load(directory)


def test_a_scalar_the_launcher_cannot_pass_is_not_implemented(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(driver, "driver_module", lambda: FakeDriver())
    monkeypatch.setattr(driver.Device, "_instance", None)
    draft = Manifest(
        name="halve",
        entry_symbol="halve_kernel",
        params=(
            ParamSpec("A", "float16", shape=(4,)),
            ParamSpec("scale", "float16", kind="scalar"),
        ),
        target={"kind": "cuda"},
        library="halve.cubin",
        adapter="cuda_driver",
        argument_device_types=(2,),
        launches=(
            LaunchSpec(
                "halve_kernel",
                arguments=(
                    LaunchArgument("buffer", "A", "float16"),
                    LaunchArgument("scalar", "scale", "float16"),
                ),
            ),
        ),
    )
    directory = write_artifact(tmp_path / "art", draft, {"halve.cubin": b"x"})
    with pytest.raises(NotImplementedError, match=r"'scale' is a float16 scalar"):
        tl_runtime.load(directory)
