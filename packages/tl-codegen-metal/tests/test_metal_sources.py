"""metal sources for every kernel of integration_tests/kernels, without any GPU toolchain."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tvm.target import Target

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from integration_tests.kernels import ALL_KERNELS, load
from tl_backend_api import KernelSources
from tl_backend_api.testing import (
    SUITE_FIRST_CASE_GRIDS,
    SUITE_SHARED_MEMORY_KERNELS,
    GpuSourceSuite,
)
from tl_codegen_metal.backend import BACKEND
from tl_passes.gpu_lower_tile_ops import GpuLoweringError

#: Suite kernels whose constructs metal lacks (float atomics).
UNSUPPORTED = {"atomic_sum"}


def target() -> Target:
    return Target({"kind": "metal"}, host=Target("llvm"))


SUITE = GpuSourceSuite(backend=BACKEND, kind="metal", make_target=target, source_extension="metal")


def emit(name: str) -> KernelSources:
    module = load(name)
    return SUITE.emit(module.KERNEL(**module.CASES[0]["args"]), name)


def test_the_expected_grids_cover_the_suite() -> None:
    assert set(SUITE_FIRST_CASE_GRIDS) == set(ALL_KERNELS)


@pytest.mark.parametrize("name", ALL_KERNELS)
def test_kernel_source_has_entry_point_and_launch(name: str) -> None:
    if name in UNSUPPORTED:
        with pytest.raises(GpuLoweringError, match="not implemented on target 'metal'"):
            emit(name)
        return
    sources = emit(name)
    assert SUITE.problems(sources, name, grid=SUITE_FIRST_CASE_GRIDS[name]) == []
    text = SUITE.source_text(sources, name)
    assert f"kernel void {name}_kernel(" in text
    assert "threadgroup_barrier" in text or name not in SUITE_SHARED_MEMORY_KERNELS


def test_backend_resolves_for_the_kind() -> None:
    from tl_backend_api import resolve_backend

    assert resolve_backend("metal") is BACKEND


def test_torch_execution_backend_is_unavailable_here() -> None:
    from tl_backend_api.descriptors import probe_availability

    torch_spec = BACKEND.execution_backend("torch")
    assert torch_spec.adapter == "torch"
    assert probe_availability(torch_spec)[0] is False
