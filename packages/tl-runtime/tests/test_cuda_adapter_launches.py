"""The CUDA-driver adapter with several device kernels (consecutive ``T.Kernel`` launches):
each kernel is launched in the description's order with its own arguments and launch dims,
host arrays are copied to the device once and back once, against a fake driver module."""

from __future__ import annotations

import ctypes
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_cuda_adapter import FakeDriver

import tl_runtime
from tl_runtime import ArtifactError, LaunchSpec, Manifest, ParamSpec, write_artifact
from tl_runtime.adapters import cuda_driver


class TwoKernelDriver(FakeDriver):
    """``scale_kernel(A, B, M, alpha)``: B = A * alpha; then ``scale_kernel_1(B, M)``:
    B = B + 1 (reads what the first kernel wrote on the device)."""

    def cuLaunchKernel(self, function: Any, *rest: Any) -> tuple[int]:
        if function == b"scale_kernel":
            return super().cuLaunchKernel(function, *rest)
        grid, block, shared, stream = rest[0:3], rest[3:6], rest[6], rest[7]
        values, kinds = rest[8]
        self.launches.append((function, grid, block, shared, stream, kinds))
        b_ptr, m = values
        b = np.frombuffer(self.memory[b_ptr], dtype=np.float32)
        b[: m * 4] += 1
        return (0,)


def write_two_kernel_artifact(directory: Path, kernels: Any) -> Path:
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
    first = [
        {"kind": "buffer", "name": "A", "dtype": "float32"},
        {"kind": "buffer", "name": "B", "dtype": "float32"},
        {"kind": "dim", "name": "M", "dtype": "int32"},
        {"kind": "scalar", "name": "alpha", "dtype": "float32"},
    ]
    description = {"symbol": "scale_kernel", "arguments": first, "kernels": kernels}
    files = {
        "scale.cubin": b"\x7fELF fake cubin",
        "scale.kernel.json": json.dumps(description).encode(),
    }
    return write_artifact(directory, manifest, files)


KERNELS = [
    {
        "symbol": "scale_kernel",
        "arguments": [
            {"kind": "buffer", "name": "A", "dtype": "float32"},
            {"kind": "buffer", "name": "B", "dtype": "float32"},
            {"kind": "dim", "name": "M", "dtype": "int32"},
            {"kind": "scalar", "name": "alpha", "dtype": "float32"},
        ],
        "grid": ["((M + 31) // 32)"],
        "block": [128],
        "dynamic_shared_memory": 0,
    },
    {
        "symbol": "scale_kernel_1",
        "arguments": [
            {"kind": "buffer", "name": "B", "dtype": "float32"},
            {"kind": "dim", "name": "M", "dtype": "int32"},
        ],
        "grid": ["M", 2],
        "block": [64],
        "dynamic_shared_memory": 256,
    },
]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> TwoKernelDriver:
    driver = TwoKernelDriver()
    monkeypatch.setattr(cuda_driver, "driver_module", lambda: driver)
    monkeypatch.setattr(cuda_driver._Device, "_instance", None)
    return driver


def test_consecutive_kernels_run_in_order_on_one_device_copy(
    tmp_path: Path, fake: TwoKernelDriver
) -> None:
    kernel = tl_runtime.load(write_two_kernel_artifact(tmp_path / "art", KERNELS))
    a = np.arange(40 * 4, dtype=np.float32).reshape(40, 4)
    np.testing.assert_array_equal(kernel(a, 1.5), a * 1.5 + 1)
    (first, grid1, block1, shared1, _, kinds1), (second, grid2, block2, shared2, _, kinds2) = (
        fake.launches
    )
    assert (first, grid1, block1, shared1) == (b"scale_kernel", (2, 1, 1), (128, 1, 1), 0)
    assert kinds1 == (None, None, ctypes.c_int32, ctypes.c_float)
    assert (second, grid2, block2, shared2) == (b"scale_kernel_1", (40, 2, 1), (64, 1, 1), 256)
    assert kinds2 == (None, ctypes.c_int32)
    assert fake.memory == {}, "device buffers are freed after the call"


def test_a_malformed_kernels_entry_is_an_artifact_error(
    tmp_path: Path, fake: TwoKernelDriver
) -> None:
    broken = [KERNELS[0], {"arguments": []}]
    with pytest.raises(ArtifactError, match=r"entry 1 of 'kernels'.*'symbol'"):
        tl_runtime.load(write_two_kernel_artifact(tmp_path / "art", broken))


class WorkspaceDriver(FakeDriver):
    """``fill_kernel(A, W, M, alpha)``: W = A * alpha into a launcher-allocated workspace;
    ``fill_kernel_1(W, B, M)``: B = W + 1."""

    def cuLaunchKernel(self, function: Any, *rest: Any) -> tuple[int]:
        values, _kinds = rest[8]
        self.launches.append((function, values))
        if function == b"fill_kernel":
            a_ptr, w_ptr, m, alpha = values
            a = np.frombuffer(self.memory[a_ptr], dtype=np.float32)
            w = np.frombuffer(self.memory[w_ptr], dtype=np.float32)
            w[: m * 4] = a[: m * 4] * alpha
        else:
            w_ptr, b_ptr, m = values
            w = np.frombuffer(self.memory[w_ptr], dtype=np.float32)
            b = np.frombuffer(self.memory[b_ptr], dtype=np.float32)
            b[: m * 4] = w[: m * 4] + 1
        return (0,)


def test_a_workspace_is_allocated_for_the_call_and_shared_by_its_kernels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    driver = WorkspaceDriver()
    monkeypatch.setattr(cuda_driver, "driver_module", lambda: driver)
    monkeypatch.setattr(cuda_driver._Device, "_instance", None)
    workspace = {"kind": "workspace", "name": "W", "dtype": "float32", "nbytes": "M * 16"}
    dim = {"kind": "dim", "name": "M", "dtype": "int32"}
    kernels = [
        {
            "symbol": "fill_kernel",
            "arguments": [
                {"kind": "buffer", "name": "A", "dtype": "float32"},
                workspace,
                dim,
                {"kind": "scalar", "name": "alpha", "dtype": "float32"},
            ],
            "grid": [1],
            "block": [32],
        },
        {
            "symbol": "fill_kernel_1",
            "arguments": [workspace, {"kind": "buffer", "name": "B", "dtype": "float32"}, dim],
            "grid": [1],
            "block": [32],
        },
    ]
    kernel = tl_runtime.load(write_two_kernel_artifact(tmp_path / "art", kernels))
    a = np.arange(10 * 4, dtype=np.float32).reshape(10, 4)
    np.testing.assert_array_equal(kernel(a, 2.0), a * 2 + 1)
    (_, first), (_, second) = driver.launches
    assert first[1] == second[0], "both kernels get the same workspace"
    assert driver.memory == {}, "the workspace is freed after the call"
