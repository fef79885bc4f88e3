"""webgpu sources for every kernel of integration_tests/kernels, without any GPU toolchain."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from tvm.target import Target

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from integration_tests.kernels import ALL_KERNELS, load
from tl_backend_api.artifact import kernel_module
from tl_codegen_webgpu.backend import BACKEND
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
UNSUPPORTED = {"atomic_sum"} if "webgpu" in ("metal", "webgpu") else set()


def target() -> Target:
    return Target({"kind": "webgpu"}, host=Target("llvm"))


def emit(name: str) -> Any:
    module = load(name)
    func = module.KERNEL(**module.CASES[0]["args"])
    mod = BACKEND.pipelines["webgpu"].run(kernel_module(func, name), target())
    return BACKEND.device_codegens["webgpu"].emit_source(mod, target())


def test_the_expected_grids_cover_the_suite() -> None:
    assert set(EXPECTED_GRID) == set(ALL_KERNELS)


@pytest.mark.parametrize("name", ALL_KERNELS)
def test_kernel_source_has_entry_point_and_launch(name: str) -> None:
    if name in UNSUPPORTED:
        with pytest.raises(GpuLoweringError, match="not implemented on target 'webgpu'"):
            emit(name)
        return
    sources = emit(name)
    text = sources.files[f"{name}.wgsl"]
    assert f"fn {name}_kernel(" in text
    assert "@compute @workgroup_size(128, 1, 1)" in text
    assert sources.entry_symbol == f"{name}_kernel"
    (launch,) = sources.launches
    assert launch.grid == EXPECTED_GRID[name]
    assert launch.block == (128,)
    assert f"{name}.kernel.json" in sources.files


def test_backend_resolves_for_the_kind() -> None:
    from tl_backend_api import resolve_backend

    assert resolve_backend("webgpu") is BACKEND


def test_tl_jit_lower_gives_wgsl_and_running_says_it_cannot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tl_jit
    import tl_runtime

    monkeypatch.setenv("TL_CACHE_DIR", str(tmp_path))
    module = load("softmax")
    func = module.KERNEL(**module.CASES[0]["args"])
    sources = tl_jit.lower(func, target="webgpu")
    assert sources.language == "wgsl"
    assert "@compute" in sources.files["main.wgsl"]
    with pytest.raises(tl_runtime.ArtifactError, match=r"main\.wgsl"):
        tl_jit.compile(func, target="webgpu", out_idx=module.OUT_IDX)
