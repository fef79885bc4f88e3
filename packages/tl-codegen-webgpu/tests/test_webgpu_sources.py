"""webgpu sources for every kernel of integration_tests/kernels, without any GPU toolchain."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tvm.target import Target

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from integration_tests.kernels import ALL_KERNELS, load
from tl_backend_api.gpu.suite import GpuSourceSuite
from tl_codegen_webgpu.backend import BACKEND


def target() -> Target:
    return Target({"kind": "webgpu"}, host=Target("llvm"))


SUITE = GpuSourceSuite(
    backend=BACKEND,
    kind="webgpu",
    make_target=target,
    source_extension="wgsl",
    #: Float atomics: webgpu has none.
    unsupported={"atomic_sum"},
)


@pytest.mark.parametrize("name", ALL_KERNELS)
def test_kernel_source_has_entry_point_and_launch(name: str) -> None:
    text = SUITE.check_suite_kernel(load(name), name)
    if text is None:
        return
    assert f"fn {name}_kernel(" in text
    assert "@compute @workgroup_size(128, 1, 1)" in text


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


def test_the_pipeline_lowers_with_this_packages_traits() -> None:
    from tl_codegen_webgpu.backend import BACKEND as backend
    from tl_codegen_webgpu.traits import WEBGPU_TRAITS
    from tl_passes.gpu import GpuLowerTileOpsPass, GpuPlanSharedMemoryPass, SharedMemoryModel

    stages = backend.pipelines["webgpu"].stages
    (lowering,) = [s for s in stages if isinstance(s, GpuLowerTileOpsPass)]
    assert lowering.traits is WEBGPU_TRAITS
    (planning,) = [s for s in stages if isinstance(s, GpuPlanSharedMemoryPass)]
    assert planning.static is (WEBGPU_TRAITS.shared_memory is SharedMemoryModel.STATIC)


def test_integer_conversions_and_comparisons_keep_their_meaning_in_32_bits() -> None:
    """The simplifier folded ``cast(u32, int32) < 0`` and ``M == INT32_MIN`` to 0 (``M``
    was not even read): the webgpu pipeline runs ``wrapping-casts`` with 32-bit
    arithmetic only (WGSL has no 64-bit integer) and ``int32-minimum-comparisons``."""
    import tl_jit
    from integration_tests.integer_rule_kernel import integer_rule_kernel

    kernel = integer_rule_kernel(narrow=False)
    files = tl_jit.lower(kernel, target="webgpu").files
    text = next(body for name, body in files.items() if name.endswith(".wgsl"))
    assert "Out_ptr[i32(threadIdx.x)] = 0i;" not in text
    assert "M_ptr[" in text
    assert "i64" not in text and "u64" not in text


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64"])
def test_integers_wgsl_has_not_are_refused_before_lowering(dtype: str) -> None:
    """WGSL's integers are i32 and u32: an int8 buffer was printed as ``array<i8>``, a
    shader no WebGPU implementation compiles."""
    import tl_ir.language as T
    import tl_jit
    from tl_backend_api import MissingCapabilityError

    @T.prim_func
    def copy_narrow(A: T.Tensor((8,), dtype), B: T.Tensor((8,), dtype)):
        with T.Kernel(1, threads=8) as _bx:
            for i in T.Parallel(8):
                B[i] = A[i]

    with pytest.raises(MissingCapabilityError, match=f"computes in {dtype}"):
        tl_jit.lower(copy_narrow, target="webgpu")
