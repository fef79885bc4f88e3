"""tl_backend_api.gpu.sources (the GPU codegens' shared source assembly) and
tl_backend_api.gpu.suite (the GPU backends' shared source checks)."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
import tvm
from tvm.target import Target

import tl_backend_api
from tl_backend_api import KernelArgument, KernelLaunch, KernelSources, ToolchainError
from tl_backend_api.gpu import sources as gpu_sources_module
from tl_backend_api.gpu.build import (
    DeviceArgument,
    DeviceBuildError,
    DeviceKernel,
    DeviceModule,
)
from tl_backend_api.gpu.sources import (
    build_device_sources,
    device_kernel_sources,
    emit_single_source,
    kernel_launches,
    module_kernel_name,
    probe_tool_version,
)
from tl_backend_api.gpu.suite import (
    GpuSourceSuite,
    SuiteKernelExpectation,
    suite_kernel_expectation,
)
from tl_passes.gpu import GpuLoweringError


def one_function_module(symbol: str | None, global_name: str = "gv") -> tvm.IRModule:
    n = tvm.tirx.Var("n", "int32")
    func = tvm.tirx.PrimFunc([n], tvm.tirx.Evaluate(tvm.tirx.const(0, "int32")))
    if symbol is not None:
        func = func.with_attr("global_symbol", symbol)
    return tvm.IRModule({global_name: func})


def two_kernel_device(primary: str = "// source") -> DeviceModule:
    first = DeviceKernel(
        symbol="scale_kernel",
        grid=(4, "((M + 31) // 32)"),
        block=(128,),
        dynamic_shared_memory=256,
        arguments=(DeviceArgument("buffer", "A", "float32"), DeviceArgument("dim", "M", "int32")),
    )
    second = DeviceKernel(
        symbol="scale_kernel_1", grid=(1,), block=(32, 2), dynamic_shared_memory=0, arguments=()
    )
    return DeviceModule(sources={"": primary, "asm": "; asm"}, kernels=(first, second))


def test_the_gpu_kit_is_imported_from_its_module_not_the_package() -> None:
    """Only the GPU backends use these: they live in tl_backend_api.gpu.sources alone."""
    for name in ("build_device_sources", "emit_single_source", "probe_tool_version"):
        assert callable(getattr(gpu_sources_module, name))
        assert name not in tl_backend_api.__all__


def test_module_kernel_name_prefers_the_global_symbol() -> None:
    assert module_kernel_name(one_function_module("scale", "gv")) == "scale"
    assert module_kernel_name(one_function_module(None, "fallback")) == "fallback"


def test_module_kernel_name_of_an_empty_module_names_the_parameter() -> None:
    with pytest.raises(ValueError, match="mod: expected a module with one kernel"):
        module_kernel_name(tvm.IRModule({}))


def test_a_target_without_host_needs_the_backends_host() -> None:
    with pytest.raises(ToolchainError, match="has no host target and no host= was given"):
        build_device_sources(one_function_module("k"), Target("cuda"))


def test_build_device_sources_reports_tvm_failure_as_toolchain_error() -> None:
    # A module without T.Kernel: lowering yields no device kernel.
    with pytest.raises(ToolchainError, match="no device kernel") as caught:
        build_device_sources(one_function_module("k"), Target("cuda"), host="llvm")
    assert isinstance(caught.value.__cause__, DeviceBuildError)


def test_kernel_launches_follow_every_kernel_in_order_with_its_arguments() -> None:
    assert kernel_launches(two_kernel_device()) == (
        KernelLaunch(
            "scale_kernel",
            (4, "((M + 31) // 32)"),
            (128,),
            256,
            (KernelArgument("buffer", "A", "float32"), KernelArgument("dim", "M", "int32")),
        ),
        KernelLaunch("scale_kernel_1", (1,), (32, 2), 0),
    )


def test_a_workspace_launch_argument_keeps_its_size() -> None:
    workspace = DeviceArgument("workspace", "W", "float32", "(M * 4)")
    kernel = DeviceKernel("k_kernel", (1,), (32,), 0, (workspace,))
    (launch,) = kernel_launches(DeviceModule(sources={"": ""}, kernels=(kernel,)))
    assert launch.arguments == (KernelArgument("workspace", "W", "float32", "(M * 4)"),)


def test_device_kernel_sources_holds_the_backend_files_and_every_launch() -> None:
    device = two_kernel_device()
    sources = device_kernel_sources(
        device, language="amdgpu", files={"scale.s": "; asm", "scale.ll": "; ir"}
    )
    assert list(sources.files) == ["scale.s", "scale.ll"]
    assert sources.language == "amdgpu"
    assert sources.entry_symbol == "scale_kernel"
    assert sources.launches == kernel_launches(device)


def test_emit_single_source_names_the_file_and_applies_the_transform(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple[str, ...]] = []

    def fake_build(
        mod: Any, target: Any, *, host: Any, source_formats: tuple[str, ...]
    ) -> DeviceModule:
        seen.append(source_formats)
        return two_kernel_device("kernel body")

    monkeypatch.setattr(gpu_sources_module, "build_device_module", fake_build)
    sources = emit_single_source(
        one_function_module("scale"),
        Target("cuda"),
        language="cuda",
        extension="cu",
        transform=lambda text: "// prelude\n" + text,
    )
    assert seen == [("",)]
    assert sources.files["scale.cu"] == "// prelude\nkernel body"
    assert list(sources.files) == ["scale.cu"]
    untransformed = emit_single_source(
        one_function_module("scale"), Target("metal"), language="metal", extension="metal"
    )
    assert untransformed.files["scale.metal"] == "kernel body"


def test_emit_single_source_checks_the_module_before_lowering(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def must_not_build(*args: Any, **kwargs: Any) -> DeviceModule:
        raise AssertionError("lowering ran for an empty module")

    monkeypatch.setattr(gpu_sources_module, "build_device_module", must_not_build)
    with pytest.raises(ValueError, match="empty module"):
        emit_single_source(tvm.IRModule({}), Target("cuda"), language="cuda", extension="cu")


def fake_tool(tmp_path: Path, output: str) -> str:
    script = tmp_path / "tool"
    script.write_text(f"#!/bin/sh\nprintf '{output}'\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


@pytest.mark.skipif(os.name != "posix", reason="the fake tool is a shell script")
def test_probe_tool_version_picks_the_line(tmp_path: Path) -> None:
    executable = fake_tool(tmp_path, "first line\\nrelease 12.4\\n")
    info = probe_tool_version("tool", executable, lambda lines: lines[-1])
    assert info is not None
    assert (info.name, info.executable, info.version) == ("tool", executable, "release 12.4")
    unknown = probe_tool_version("tool", executable, lambda lines: None)
    assert unknown is not None and unknown.version == "unknown"


def test_probe_tool_version_without_a_usable_tool_is_none(tmp_path: Path) -> None:
    assert probe_tool_version("tool", None, lambda lines: lines[0]) is None
    not_executable = tmp_path / "not-a-tool"
    not_executable.write_text("")
    assert probe_tool_version("tool", str(not_executable), lambda lines: lines[0]) is None


class FixedCodegen:
    def __init__(self, sources: KernelSources) -> None:
        self.sources = sources

    def emit_source(self, mod: Any, target: Target) -> KernelSources:
        return self.sources

    def build(self, mod: Any, target: Target) -> Any:
        raise NotImplementedError("FixedCodegen.build: the suite only emits sources")


def suite_of(sources: KernelSources, unsupported: frozenset[str] = frozenset()) -> GpuSourceSuite:
    from tl_backend_api_testkit import make_backend

    backend = make_backend(
        "fake-gpu", kinds=("cuda",), device_codegens={"cuda": FixedCodegen(sources)}
    )
    return GpuSourceSuite(
        backend=backend,
        kind="cuda",
        make_target=lambda: Target("cuda"),
        source_extension="cu",
        unsupported=unsupported,
    )


def good_sources() -> KernelSources:
    return device_kernel_sources(two_kernel_device(), language="cuda", files={"scale.cu": "// cu"})


def test_suite_problems_are_empty_for_the_expected_shape() -> None:
    single = DeviceModule(sources={"": ""}, kernels=two_kernel_device().kernels[:1])
    sources = device_kernel_sources(single, language="cuda", files={"scale.cu": "x"})
    suite = suite_of(sources)
    assert suite.problems(sources, "scale", grid=(4, "((M + 31) // 32)"), block=(128,)) == []
    assert suite.source_text(sources, "scale") == "x"


def test_suite_problems_name_each_difference() -> None:
    sources = good_sources()  # two launches
    suite = suite_of(sources)
    assert suite.problems(sources, "scale", grid=(4,), block=(128,)) == [
        "launches: expected one launch, got 2"
    ]
    assert suite.problems(sources, "other", grid=(4,), block=(128,))[:2] == [
        "entry_symbol: expected 'other_kernel', got 'scale_kernel'",
        "files: expected 'other.cu', got ['scale.cu']",
    ]
    single = DeviceModule(sources={"": ""}, kernels=two_kernel_device().kernels[:1])
    one = device_kernel_sources(single, language="cuda", files={"scale.cu": "x"})
    assert suite.problems(one, "scale", grid=(8,), block=(64,)) == [
        "launch grid: expected (8,), got (4, '((M + 31) // 32)')",
        "launch block: expected (64,), got (128,)",
    ]
    bare = DeviceModule(sources={"": ""}, kernels=two_kernel_device().kernels[1:])
    assert suite.problems(
        device_kernel_sources(bare, language="cuda", files={"scale.cu": "x"}),
        "scale",
        grid=(1,),
        block=(32, 2),
    ) == [
        "entry_symbol: expected 'scale_kernel', got 'scale_kernel_1'",
        "launch kernel_name: expected 'scale_kernel', got 'scale_kernel_1'",
        "launch arguments: expected the device kernel's parameters, got none",
    ]
    with pytest.raises(AssertionError, match=r"expected 'other\.cu'"):
        suite.source_text(sources, "other")


def test_suite_emit_runs_the_pipeline_then_the_codegen() -> None:
    sources = good_sources()
    n = tvm.tirx.Var("n", "int32")
    func = tvm.tirx.PrimFunc([n], tvm.tirx.Evaluate(tvm.tirx.const(0, "int32")))
    assert suite_of(sources).emit(func, "scale") is sources


class FakeSuiteKernel:
    """Stands for a suite kernel module: ``KERNEL`` at ``CASES[0]["args"]``, the launch
    it declares for the GPU source suite in ``GPU_SOURCES``."""

    CASES: Any = ({"args": {"n": 8}},)

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.GPU_SOURCES: Any = {"grid": (4,), "block": (128,), "block_barriers": True}

    def KERNEL(self, **args: Any) -> Any:
        self.calls.append(args)
        n = tvm.tirx.Var("n", "int32")
        return tvm.tirx.PrimFunc([n], tvm.tirx.Evaluate(tvm.tirx.const(0, "int32")))


def softmax_sources(grid: tuple[int | str, ...]) -> KernelSources:
    argument = DeviceArgument("buffer", "A", "float32")
    kernel = DeviceKernel("softmax_kernel", grid, (128,), 0, (argument,))
    device = DeviceModule(sources={"": ""}, kernels=(kernel,))
    return device_kernel_sources(device, language="cuda", files={"softmax.cu": "y"})


def test_check_suite_kernel_emits_the_first_case_and_returns_the_text() -> None:
    kernel = FakeSuiteKernel()
    sources = softmax_sources((4,))
    assert suite_of(sources).check_suite_kernel(kernel, "softmax") == "y"  # type: ignore[arg-type]
    assert kernel.calls == [{"n": 8}]


def test_check_suite_kernel_fails_on_a_wrong_grid() -> None:
    suite = suite_of(softmax_sources((99,)))
    with pytest.raises(AssertionError, match=r"softmax: \['launch grid: expected \(4,\)"):
        suite.check_suite_kernel(FakeSuiteKernel(), "softmax")  # type: ignore[arg-type]


def test_check_suite_kernel_checks_the_launch_the_kernel_module_declares() -> None:
    kernel = FakeSuiteKernel()
    kernel.GPU_SOURCES = {"grid": (4,), "block": (64,), "block_barriers": False}
    suite = suite_of(softmax_sources((4,)))
    with pytest.raises(AssertionError, match=r"launch block: expected \(64,\), got \(128,\)"):
        suite.check_suite_kernel(kernel, "softmax")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        (None, r"suite kernel 'k': GPU_SOURCES: expected a dict with 'grid', 'block'"),
        (
            {"grid": (1,), "block": (128,)},
            r"expected the keys \['block', 'block_barriers', 'grid'\]",
        ),
        (
            {"grid": (), "block": (128,), "block_barriers": True},
            r"\['grid'\]: expected a non-empty",
        ),
        (
            {"grid": [1], "block": (128,), "block_barriers": True},
            r"\['grid'\]: expected a non-empty",
        ),
        ({"grid": (1,), "block": (True,), "block_barriers": True}, r"\['block'\]: expected"),
        (
            {"grid": (1,), "block": (128,), "block_barriers": 1},
            r"\['block_barriers'\]: expected a bool",
        ),
    ],
)
def test_a_kernel_without_a_valid_declaration_is_refused_naming_what_is_wrong(
    declared: Any, message: str
) -> None:
    kernel = FakeSuiteKernel()
    kernel.GPU_SOURCES = declared
    with pytest.raises(ValueError, match=message):
        suite_kernel_expectation(kernel, "k")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        suite_of(softmax_sources((4,))).check_suite_kernel(kernel, "k")  # type: ignore[arg-type]


def test_every_kernel_of_the_suite_declares_what_the_gpu_source_suite_checks() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    from integration_tests.kernels import ALL_KERNELS, load

    found = {name: suite_kernel_expectation(load(name), name) for name in ALL_KERNELS}
    assert all(isinstance(e, SuiteKernelExpectation) for e in found.values())
    assert {name for name, e in found.items() if e.block_barriers} >= {"gemm", "softmax"}


class RefusingCodegen(FixedCodegen):
    def __init__(self, message: str) -> None:
        self.message = message

    def emit_source(self, mod: Any, target: Target) -> KernelSources:
        raise GpuLoweringError(self.message)


def test_check_suite_kernel_expects_unsupported_kernels_to_be_refused() -> None:
    suite = suite_of(softmax_sources((4,)), unsupported=frozenset({"softmax"}))
    with pytest.raises(AssertionError, match="expected a GpuLoweringError on 'cuda'"):
        suite.check_suite_kernel(FakeSuiteKernel(), "softmax")  # type: ignore[arg-type]
    refused = attrs.evolve(
        suite,
        backend=attrs.evolve(
            suite.backend,
            device_codegens={"cuda": RefusingCodegen("atomics not implemented on target 'cuda'")},
        ),
    )
    assert refused.check_suite_kernel(FakeSuiteKernel(), "softmax") is None  # type: ignore[arg-type]
    elsewhere = attrs.evolve(
        suite,
        backend=attrs.evolve(
            suite.backend,
            device_codegens={"cuda": RefusingCodegen("atomics not implemented on target 'metal'")},
        ),
    )
    with pytest.raises(AssertionError, match="not implemented on target 'cuda'"):
        elsewhere.check_suite_kernel(FakeSuiteKernel(), "softmax")  # type: ignore[arg-type]
