"""The CUDA-driver adapter with several device kernels (consecutive ``T.Kernel`` launches):
each kernel is launched in the manifest's ``launches`` order with its own arguments and
launch dims, host arrays are copied to the device once and back once, against a fake
driver module."""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_cuda_adapter import SCALE_ARGUMENTS, FakeDriver, write_scale_artifact

import tl_runtime
from tl_runtime import LaunchArgument, LaunchSpec
from tl_runtime_cuda import driver


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


LAUNCHES = (
    LaunchSpec("scale_kernel", grid=("((M + 31) // 32)",), block=(128,), arguments=SCALE_ARGUMENTS),
    LaunchSpec(
        "scale_kernel_1",
        grid=("M", 2),
        block=(64,),
        dynamic_shared_memory=256,
        arguments=(LaunchArgument("buffer", "B", "float32"), LaunchArgument("dim", "M", "int32")),
    ),
)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> TwoKernelDriver:
    fake_driver = TwoKernelDriver()
    monkeypatch.setattr(driver, "driver_module", lambda: fake_driver)
    monkeypatch.setattr(driver.Device, "_instance", None)
    return fake_driver


def test_consecutive_kernels_run_in_order_on_one_device_copy(
    tmp_path: Path, fake: TwoKernelDriver
) -> None:
    kernel = tl_runtime.load(write_scale_artifact(tmp_path / "art", *LAUNCHES))
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


def test_every_symbol_is_looked_up_when_the_module_loads(
    tmp_path: Path, fake: TwoKernelDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked_up: list[bytes] = []

    def get_function(module: Any, name: bytes) -> tuple[int, bytes]:
        looked_up.append(name)
        return (0, name)

    monkeypatch.setattr(fake, "cuModuleGetFunction", get_function)
    tl_runtime.load(write_scale_artifact(tmp_path / "art", *LAUNCHES))
    assert looked_up == [b"scale_kernel", b"scale_kernel_1"]


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
    fake_driver = WorkspaceDriver()
    monkeypatch.setattr(driver, "driver_module", lambda: fake_driver)
    monkeypatch.setattr(driver.Device, "_instance", None)
    workspace = LaunchArgument("workspace", "W", "float32", "M * 16")
    dim = LaunchArgument("dim", "M", "int32")
    launches = (
        LaunchSpec(
            "fill_kernel",
            block=(32,),
            arguments=(
                LaunchArgument("buffer", "A", "float32"),
                workspace,
                dim,
                LaunchArgument("scalar", "alpha", "float32"),
            ),
        ),
        LaunchSpec(
            "fill_kernel_1",
            block=(32,),
            arguments=(workspace, LaunchArgument("buffer", "B", "float32"), dim),
        ),
    )
    kernel = tl_runtime.load(write_scale_artifact(tmp_path / "art", *launches))
    a = np.arange(10 * 4, dtype=np.float32).reshape(10, 4)
    np.testing.assert_array_equal(kernel(a, 2.0), a * 2 + 1)
    (_, first), (_, second) = fake_driver.launches
    assert first[1] == second[0], "both kernels get the same workspace"
    assert fake_driver.memory == {}, "the workspace is freed after the call"
