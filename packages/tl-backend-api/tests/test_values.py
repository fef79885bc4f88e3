"""The value types codegen packages return: frozen, copied, validated."""

from __future__ import annotations

from typing import Any

import pytest

from tl_backend_api import (
    BackendValidationError,
    DeviceBuildResult,
    KernelLaunch,
    KernelSources,
    Pipeline,
    PipelineStage,
    ToolchainError,
)


def test_kernel_sources_copy_and_freeze_their_files() -> None:
    files = {"k.cu": "__global__ void k() {}"}
    launch = KernelLaunch("k", grid=("n // 128", 1), block=[128], dynamic_shared_memory_bytes=0)
    sources = KernelSources(language="cuda", files=files, entry_symbol="k", launches=[launch])
    files["k.cu"] = "changed"
    assert sources.files["k.cu"].startswith("__global__")
    with pytest.raises(TypeError):
        sources.files["x"] = ""  # type: ignore[index]
    assert sources.launches == (launch,) and launch.block == (128,)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"files": {"dir/k.c": ""}}, "plain file names"),
        ({"files": {"k.c": b""}}, r"files\['k.c'\]: expected source text"),
        ({"entry_symbol": ""}, "entry_symbol: expected a non-empty symbol"),
        ({"language": ""}, "language: expected a non-empty name"),
        ({"launches": ["k"]}, "expected KernelLaunch items"),
    ],
)
def test_kernel_sources_validation(kwargs: dict[str, Any], message: str) -> None:
    fields: dict[str, Any] = {"language": "c", "files": {"k.c": ""}, "entry_symbol": "k"}
    fields.update(kwargs)
    with pytest.raises(BackendValidationError, match=message):
        KernelSources(**fields)


def test_build_result() -> None:
    sources = KernelSources(language="c", files={"k.c": ""}, entry_symbol="k")
    assert not DeviceBuildResult(sources=sources).compiled
    built = DeviceBuildResult(
        sources=sources, binaries={"k.so": b"\x7fELF"}, toolchain_versions={"gcc": "13"}
    )
    assert built.compiled and built.entry_symbol == "k"
    with pytest.raises(BackendValidationError, match=r"binaries\['k.so'\]: expected bytes"):
        DeviceBuildResult(sources=sources, binaries={"k.so": "text"})  # type: ignore[dict-item]


def test_launch_dims_validation() -> None:
    with pytest.raises(BackendValidationError, match=r"expected int or expression"):
        KernelLaunch("k", grid=(1.5,), block=(1,))  # type: ignore[arg-type]
    with pytest.raises(BackendValidationError, match=r"expected a sequence"):
        KernelLaunch("k", grid="128", block=(1,))


def test_pipeline_validation() -> None:
    def identity(mod: Any, target: Any) -> Any:
        return mod

    with pytest.raises(ValueError, match=r"kebab-case"):
        PipelineStage("LowerCopy", identity)
    with pytest.raises(TypeError, match=r"expected a callable"):
        PipelineStage("lower-copy", "not callable")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"at least one stage"):
        Pipeline("empty", ())
    with pytest.raises(ValueError, match=r"appears twice"):
        Pipeline("dup", (PipelineStage("a", identity), PipelineStage("a", identity)))


def test_stage_returning_something_else_is_a_type_error(small_module: Any) -> None:
    pipe = Pipeline("bad", (PipelineStage("to-none", lambda mod, target: None),))
    with pytest.raises(
        TypeError, match=r"stage 'to-none' of pipeline 'bad': expected it to return an IRModule"
    ):
        pipe.run(small_module, None)


def test_toolchain_error_carries_the_tools_message_and_source() -> None:
    error = ToolchainError(
        "gcc failed", command=("gcc", "k.c"), output="k.c:1: error: x", source_path="/tmp/k.c"
    )
    text = str(error)
    assert (
        "gcc failed" in text
        and "/tmp/k.c" in text
        and "k.c:1: error: x" in text
        and "gcc k.c" in text
    )


def test_pipeline_from_passes_runs_tl_passes_with_the_target(small_module: Any) -> None:
    import dataclasses

    from tvm.target import Target

    from tl_backend_api import pipeline_from_passes
    from tl_passes import Pass, PassContext

    seen: list[tuple[str, Any]] = []

    @dataclasses.dataclass(frozen=True)
    class Record(Pass):
        name = "record-target"

        def run(self, mod: Any, ctx: PassContext) -> Any:
            seen.append((str(ctx.target.kind.name), dict(ctx.options)))
            return mod

    pipe = pipeline_from_passes("from-passes", [Record()], options={"unroll": 4})
    assert pipe.stage_names == ("record-target",)
    pipe.run(small_module, Target({"kind": "c"}))
    assert seen == [("c", {"unroll": 4})]
    with pytest.raises(TypeError, match=r"stages\[0\]: expected a tl_passes.Pass instance"):
        pipeline_from_passes("bad", [lambda mod, target: mod])  # type: ignore[list-item]
