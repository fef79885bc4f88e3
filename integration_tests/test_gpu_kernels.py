"""The kernel suite on an NVIDIA GPU (marked ``gpu``; skipped where no CUDA device is visible).

Every kernel of integration_tests/kernels, every case: built with nvcc to a
cubin (execution backend ``cubin``) and, for one case per kernel, kept as
CUDA C and compiled by NVRTC at load (``nvrtc``); both run through the
CUDA launcher plug-in (tl-runtime-cuda's ``cuda_driver`` adapter) and are
compared with the kernel's numpy ``REFERENCE``. ``scripts/gpu-check`` runs
this file and the GEMM benchmark.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from integration_tests.kernels import ALL_KERNELS, load
from tl_runtime import adapter_availability

_DEVICE = adapter_availability("cuda_driver")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        not _DEVICE.available, reason=f"no CUDA device is usable here: {_DEVICE.reason}"
    ),
]

CASES = [
    pytest.param(name, index, id=f"{name}-{index}")
    for name in ALL_KERNELS
    for index in range(len(load(name).CASES))
]


@pytest.fixture(scope="session")
def gpu_artifacts(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Build each (kernel, args, execution backend) once; ``get(name, case, spec) -> Path``."""
    from integration_tests.kernels.suite import build_case, build_key
    from tl_backend_api import create_backend_context

    root = tmp_path_factory.mktemp("gpu-artifacts")
    built: dict[str, Path] = {}
    contexts: dict[str, Any] = {}

    def get(name: str, case: dict[str, Any], spec: str) -> Path:
        if spec not in contexts:
            contexts[spec] = create_backend_context(
                {"kind": "cuda", "arch": _device_arch()}, execution_backend=spec
            )
        key = f"{spec}-{build_key(name, case, 'cuda')}"
        if key not in built:
            built[key] = build_case(contexts[spec], load(name), case, root / key)
        return built[key]

    return get


def _device_arch() -> str:
    from tl_runtime_cuda.driver import Device

    return Device.get().arch


@pytest.mark.parametrize(("name", "index"), CASES)
def test_kernel_case_matches_reference_on_the_gpu(
    gpu_artifacts: Any, name: str, index: int
) -> None:
    from integration_tests.kernels.suite import run_case

    module = load(name)
    case = module.CASES[index]
    artifact = gpu_artifacts(name, case, "cubin")
    assert run_case(artifact, module, case, "cuda_driver") == [], (name, index)


def test_tilelangs_tvm_ffi_name_builds_and_runs_a_cubin(gpu_artifacts: Any) -> None:
    """``execution_backend="tvm_ffi"`` (what TileLang programs pass) is the ``cubin`` spec."""
    import tl_runtime
    from integration_tests.kernels.suite import run_case

    module = load("elementwise_add")
    case = module.CASES[0]
    artifact = gpu_artifacts("elementwise_add", case, "tvm_ffi")
    assert tl_runtime.read_manifest(artifact).execution_backend == "cubin"
    assert run_case(artifact, module, case, "cuda_driver") == []


@pytest.mark.parametrize("name", ALL_KERNELS)
def test_nvrtc_compiles_at_load_and_matches_reference(gpu_artifacts: Any, name: str) -> None:
    from integration_tests.kernels.suite import run_case

    module = load(name)
    case = module.CASES[0]
    artifact = gpu_artifacts(name, case, "nvrtc")
    assert run_case(artifact, module, case, "cuda_driver") == [], name
