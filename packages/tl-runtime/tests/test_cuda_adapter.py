"""The CUDA-driver adapter (key ``cuda_driver``): probes without cuda-python, and the whole call
path (argument order, launch dims, copies in and back) against a fake driver module."""

from __future__ import annotations

import ctypes
import json
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tl_runtime
from tl_runtime import LaunchSpec, Manifest, ParamSpec, write_artifact
from tl_runtime.adapters import cuda_driver
from tl_runtime.adapters.cuda_driver import CudaDriverAdapter


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


def write_scale_artifact(directory: Path) -> Path:
    manifest = Manifest(
        name="scale",
        entry_symbol="scale_kernel",
        params=(
            ParamSpec("A", "float32", shape=("M", 4)),
            ParamSpec("alpha", "float32", kind="scalar"),
            ParamSpec("B", "float32", shape=("M", 4), role="output"),
        ),
        target={"kind": "cuda", "arch": "sm_90"},
        library="scale.cubin",
        out_idx=(2,),
        execution_backend="tvm_ffi",
        adapter="cuda_driver",
        argument_device_types=(2,),
        launch=LaunchSpec(grid=("((M + 31) // 32)",), block=(128,)),
    )
    description = {
        "symbol": "scale_kernel",
        "arguments": [
            {"kind": "buffer", "name": "A", "dtype": "float32"},
            {"kind": "buffer", "name": "B", "dtype": "float32"},
            {"kind": "dim", "name": "M", "dtype": "int32"},
            {"kind": "scalar", "name": "alpha", "dtype": "float32"},
        ],
    }
    files = {
        "scale.cubin": b"\x7fELF fake cubin",
        "scale.kernel.json": json.dumps(description).encode(),
    }
    return write_artifact(directory, manifest, files)


def test_the_cuda_driver_key_is_the_cuda_driver_adapter() -> None:
    assert tl_runtime.get_adapter("cuda_driver") is CudaDriverAdapter


def test_probe_without_cuda_python_says_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cuda_driver, "driver_module", lambda: None)
    availability = CudaDriverAdapter.probe()
    assert not availability
    assert "cuda-python" in availability.reason


def test_loading_without_cuda_python_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cuda_driver, "driver_module", lambda: None)
    directory = write_scale_artifact(tmp_path / "art")
    with pytest.raises(tl_runtime.AdapterUnavailableError, match="cuda-python"):
        tl_runtime.load(directory)


def test_call_path_against_a_fake_driver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeDriver()
    monkeypatch.setattr(cuda_driver, "driver_module", lambda: fake)
    monkeypatch.setattr(cuda_driver._Device, "_instance", None)
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
    assert cuda_driver._Device.get().arch == "sm_90"
