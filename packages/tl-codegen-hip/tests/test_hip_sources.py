"""hip sources for every kernel of integration_tests/kernels, without any GPU toolchain."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tvm.target import Target

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from integration_tests.kernels import ALL_KERNELS, load
from tl_backend_api.gpu.suite import GpuSourceSuite
from tl_codegen_hip.backend import BACKEND


def target() -> Target:
    return Target({"kind": "rocm", "mcpu": "gfx942"}, host=Target("llvm"))


SUITE = GpuSourceSuite(
    backend=BACKEND,
    kind="rocm",
    make_target=target,
    source_extension="s",
)


@pytest.mark.parametrize("name", ALL_KERNELS)
def test_kernel_source_has_entry_point_and_launch(name: str) -> None:
    text = SUITE.check_suite_kernel(load(name), name)
    if text is None:
        return
    assert f".globl\t{name}_kernel" in text
    assert ".amdhsa_kernel" in text


def test_backend_resolves_for_the_kind() -> None:
    from tl_backend_api import resolve_backend

    assert resolve_backend("rocm") is BACKEND


def test_build_without_lld_says_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    from tl_backend_api import ToolchainError
    from tl_backend_api.artifact import kernel_module
    from tl_codegen_hip.codegen import HipDeviceCodegen
    from tl_codegen_hip.toolchain import Lld

    monkeypatch.setattr(Lld, "executable", lambda self: None)
    module = load("softmax")
    func = module.KERNEL(**module.CASES[0]["args"])
    mod = BACKEND.pipelines["rocm"].run(kernel_module(func, "softmax"), target())
    with pytest.raises(ToolchainError, match=r"ld\.lld"):
        HipDeviceCodegen().build(mod, target())


def test_the_only_execution_backend_is_source_only() -> None:
    from tl_backend_api.descriptors import probe_availability

    (source,) = BACKEND.execution_backends
    assert source.name == "source"
    assert probe_availability(source)[0] is True
    assert source.enable_device_compile is False


def test_the_pipeline_lowers_with_this_packages_traits() -> None:
    from tl_codegen_hip.backend import BACKEND as backend
    from tl_codegen_hip.traits import HIP_TRAITS
    from tl_passes.gpu import GpuLowerTileOpsPass, GpuPlanSharedMemoryPass, SharedMemoryModel

    stages = backend.pipelines["rocm"].stages
    (lowering,) = [s for s in stages if isinstance(s, GpuLowerTileOpsPass)]
    assert lowering.traits is HIP_TRAITS
    (planning,) = [s for s in stages if isinstance(s, GpuPlanSharedMemoryPass)]
    assert planning.static is (HIP_TRAITS.shared_memory is SharedMemoryModel.STATIC)


def test_integer_conversions_and_comparisons_keep_their_meaning() -> None:
    """The simplifier folded ``cast(u32, int32) < 0`` and ``M == INT32_MIN`` to 0 (``M``
    was not even read): the rocm pipeline runs ``wrapping-casts`` and
    ``int32-minimum-comparisons`` first."""
    import tl_jit
    from integration_tests.integer_rule_kernel import integer_rule_kernel

    files = tl_jit.lower(integer_rule_kernel(), target="rocm").files
    text = next(body for name, body in files.items() if name.endswith(".ll"))
    assert "-2147483648" in text or "-2147483647" in text
    assert "store i32 0," not in text
