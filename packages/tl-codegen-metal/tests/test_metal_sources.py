"""metal sources for every kernel of integration_tests/kernels, without any GPU toolchain."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tvm.target import Target

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from integration_tests.kernels import ALL_KERNELS, load
from tl_backend_api.gpu.suite import GpuSourceSuite, suite_kernel_expectation
from tl_codegen_metal.backend import BACKEND


def target() -> Target:
    return Target({"kind": "metal"}, host=Target("llvm"))


SUITE = GpuSourceSuite(
    backend=BACKEND,
    kind="metal",
    make_target=target,
    source_extension="metal",
    #: Float atomics: metal has none.
    unsupported={"atomic_sum"},
)


@pytest.mark.parametrize("name", ALL_KERNELS)
def test_kernel_source_has_entry_point_and_launch(name: str) -> None:
    kernel = load(name)
    text = SUITE.check_suite_kernel(kernel, name)
    if text is None:
        return
    assert f"kernel void {name}_kernel(" in text
    barriers = suite_kernel_expectation(kernel, name).block_barriers
    assert "threadgroup_barrier" in text or not barriers


def test_backend_resolves_for_the_kind() -> None:
    from tl_backend_api import resolve_backend

    assert resolve_backend("metal") is BACKEND


def test_only_the_source_backend_is_declared_until_a_metal_launcher_exists() -> None:
    from tl_backend_api.descriptors import probe_availability

    assert [spec.name for spec in BACKEND.execution_backends] == ["source"]
    source = BACKEND.execution_backend("source")
    assert source.enable_device_compile is False
    assert probe_availability(source)[0] is True


def test_the_pipeline_lowers_with_this_packages_traits() -> None:
    from tl_codegen_metal.backend import BACKEND as backend
    from tl_codegen_metal.traits import METAL_TRAITS
    from tl_passes.gpu import GpuLowerTileOpsPass, GpuPlanSharedMemoryPass, SharedMemoryModel

    stages = backend.pipelines["metal"].stages
    (lowering,) = [s for s in stages if isinstance(s, GpuLowerTileOpsPass)]
    assert lowering.traits is METAL_TRAITS
    (planning,) = [s for s in stages if isinstance(s, GpuPlanSharedMemoryPass)]
    assert planning.static is (METAL_TRAITS.shared_memory is SharedMemoryModel.STATIC)


def test_integer_conversions_comparisons_and_narrow_arithmetic_keep_their_meaning() -> None:
    """The simplifier folded ``cast(u32, int32) < 0`` and ``M == INT32_MIN`` to 0 (``M``
    was not even read), and ``B + B`` on ``char`` was computed in ``int``: the metal
    pipeline runs ``wrapping-casts``, ``int32-minimum-comparisons`` and
    ``gpu-wrap-narrow-integers``."""
    import tl_jit
    from integration_tests.integer_rule_kernel import integer_rule_kernel

    text = tl_jit.lower(integer_rule_kernel(), target="metal").files["integer_rules.metal"]
    assert "Out_ptr[((int)threadIdx)] = 0;" not in text
    assert "M_ptr[" in text
    assert "(char)(((int)B_ptr[((int)threadIdx)]) * 2)" in text
