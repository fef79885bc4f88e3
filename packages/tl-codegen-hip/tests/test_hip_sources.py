"""hip sources for every kernel of integration_tests/kernels, without any GPU toolchain."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from tvm.target import Target

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from integration_tests.kernels import ALL_KERNELS, load
from tl_backend_api.artifact import kernel_module
from tl_codegen_hip.backend import BACKEND
from tl_passes.gpu_lower_tile_ops import GpuLoweringError

#: Grid of each kernel's first case, worked out from its T.Kernel by hand.
EXPECTED_GRID: dict[str, tuple[int | str, ...]] = {
    "gemm": (2, 2),
    "gemm_transposed": (2, 2),
    "elementwise_add": (4, 4),
    "softmax": (4,),
    "rms_norm": (4,),
    "column_reduce": (2,),
    "symbolic_scale": ("((M + 31) // 32)",),
    "two_outputs": (2, 2),
    "atomic_sum": (4, 2),
    "serial_scan": (1,),
    "tile_cumsum": (4,),
}
#: Kernels whose tiles live in shared memory (they need block barriers).
SHARED_KERNELS = ("gemm", "gemm_transposed", "rms_norm", "two_outputs", "tile_cumsum", "softmax")
UNSUPPORTED = {"atomic_sum"} if "rocm" in ("metal", "webgpu") else set()


def target() -> Target:
    return Target({"kind": "rocm", "mcpu": "gfx942"}, host=Target("llvm"))


def emit(name: str) -> Any:
    module = load(name)
    func = module.KERNEL(**module.CASES[0]["args"])
    mod = BACKEND.pipelines["rocm"].run(kernel_module(func, name), target())
    return BACKEND.device_codegens["rocm"].emit_source(mod, target())


def test_the_expected_grids_cover_the_suite() -> None:
    assert set(EXPECTED_GRID) == set(ALL_KERNELS)


@pytest.mark.parametrize("name", ALL_KERNELS)
def test_kernel_source_has_entry_point_and_launch(name: str) -> None:
    if name in UNSUPPORTED:
        with pytest.raises(GpuLoweringError, match="not implemented on target 'rocm'"):
            emit(name)
        return
    sources = emit(name)
    text = sources.files[f"{name}.s"]
    assert f".globl\t{name}_kernel" in text
    assert ".amdhsa_kernel" in text
    assert sources.entry_symbol == f"{name}_kernel"
    (launch,) = sources.launches
    assert launch.grid == EXPECTED_GRID[name]
    assert launch.block == (128,)
    assert f"{name}.kernel.json" in sources.files


def test_backend_resolves_for_the_kind() -> None:
    from tl_backend_api import resolve_backend

    assert resolve_backend("rocm") is BACKEND


def test_build_without_lld_says_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    from tl_backend_api import ToolchainError
    from tl_codegen_hip.codegen import HipDeviceCodegen
    from tl_codegen_hip.toolchain import Lld

    monkeypatch.setattr(Lld, "executable", lambda self: None)
    module = load("softmax")
    func = module.KERNEL(**module.CASES[0]["args"])
    mod = BACKEND.pipelines["rocm"].run(kernel_module(func, "softmax"), target())
    with pytest.raises(ToolchainError, match=r"ld\.lld"):
        HipDeviceCodegen().build(mod, target())


def test_execution_backends_report_unavailable_here() -> None:
    from tl_backend_api.descriptors import probe_availability

    tvm_ffi, cython, source = BACKEND.execution_backends
    assert (tvm_ffi.name, cython.name, source.name) == ("tvm_ffi", "cython", "source")
    assert probe_availability(tvm_ffi)[0] is False
    assert probe_availability(cython)[0] is False
    assert source.enable_device_compile is False
