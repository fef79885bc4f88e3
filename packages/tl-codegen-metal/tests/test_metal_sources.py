"""metal sources for every kernel of integration_tests/kernels, without any GPU toolchain."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from tvm.target import Target

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from integration_tests.kernels import ALL_KERNELS, load
from tl_backend_api.artifact import kernel_module
from tl_codegen_metal.backend import BACKEND
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
UNSUPPORTED = {"atomic_sum"} if "metal" in ("metal", "webgpu") else set()


def target() -> Target:
    return Target({"kind": "metal"}, host=Target("llvm"))


def emit(name: str) -> Any:
    module = load(name)
    func = module.KERNEL(**module.CASES[0]["args"])
    mod = BACKEND.pipelines["metal"].run(kernel_module(func, name), target())
    return BACKEND.device_codegens["metal"].emit_source(mod, target())


def test_the_expected_grids_cover_the_suite() -> None:
    assert set(EXPECTED_GRID) == set(ALL_KERNELS)


@pytest.mark.parametrize("name", ALL_KERNELS)
def test_kernel_source_has_entry_point_and_launch(name: str) -> None:
    if name in UNSUPPORTED:
        with pytest.raises(GpuLoweringError, match="not implemented on target 'metal'"):
            emit(name)
        return
    sources = emit(name)
    text = sources.files[f"{name}.metal"]
    assert f"kernel void {name}_kernel(" in text
    assert "threadgroup_barrier" in text or name not in SHARED_KERNELS
    assert sources.entry_symbol == f"{name}_kernel"
    (launch,) = sources.launches
    assert launch.grid == EXPECTED_GRID[name]
    assert launch.block == (128,)
    assert f"{name}.kernel.json" in sources.files


def test_backend_resolves_for_the_kind() -> None:
    from tl_backend_api import resolve_backend

    assert resolve_backend("metal") is BACKEND


def test_torch_execution_backend_is_unavailable_here() -> None:
    from tl_backend_api.descriptors import probe_availability

    torch_spec = BACKEND.execution_backend("torch")
    assert torch_spec.adapter == "torch"
    assert probe_availability(torch_spec)[0] is False
