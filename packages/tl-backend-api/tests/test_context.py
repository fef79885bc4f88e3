"""create_backend_context: execution-backend selection, availability probes, the source-only path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest
from tl_backend_api_testkit import CountingCodegen, make_backend

from tl_backend_api import (
    Capabilities,
    ExecutionBackendError,
    ExecutionBackendSpec,
    ExecutionBackendUnavailableError,
    create_backend_context,
    probe_availability,
)
from tl_backend_api.registry import register_backend

pytestmark = pytest.mark.usefixtures("fresh_registry")


class Probe:
    """An availability probe that counts its calls."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.calls = 0

    def __call__(self) -> Any:
        self.calls += 1
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


def test_auto_picks_the_first_available_spec_in_declared_order() -> None:
    register_backend(
        make_backend(
            specs=(
                ExecutionBackendSpec("nvrtc", is_available=Probe(False)),
                ExecutionBackendSpec("fast", adapter="tvm_ffi"),
                ExecutionBackendSpec("cython"),
            )
        )
    )
    context = create_backend_context("opencl")
    assert context.execution_backend.name == "fast"
    assert context.adapter == "tvm_ffi"  # downstream keys on the adapter, not the name


def test_is_available_is_called_and_cached() -> None:
    no = Probe(False)  # a function object is truthy; only calling it says "no"
    register_backend(make_backend(specs=(ExecutionBackendSpec("torch", is_available=no),)))
    for _ in range(3):
        with pytest.raises(ExecutionBackendUnavailableError):
            create_backend_context("opencl", execution_backend="torch")
    assert no.calls == 1
    assert probe_availability(no_spec := ExecutionBackendSpec("torch", is_available=no)) == (
        False,
        "its availability probe said no",
    )
    assert probe_availability(no_spec)[0] is False and no.calls == 2


def test_a_probe_that_raises_is_unavailable_and_non_bool_is_an_error() -> None:
    boom = ExecutionBackendSpec("torch", is_available=Probe(OSError("libcuda.so missing")))
    assert probe_availability(boom) == (
        False,
        "its availability probe raised OSError('libcuda.so missing')",
    )
    with pytest.raises(TypeError, match=r"is_available\(\): expected a bool, got str"):
        probe_availability(ExecutionBackendSpec("torch", is_available=Probe("yes")))


def test_unknown_execution_backend_lists_the_allowed_names() -> None:
    register_backend(
        make_backend(specs=(ExecutionBackendSpec("tvm_ffi"), ExecutionBackendSpec("cython")))
    )
    with pytest.raises(
        ExecutionBackendError, match=r"one of \['tvm_ffi', 'cython'\].*got 'dlpack'"
    ):
        create_backend_context("opencl", execution_backend="dlpack")
    with pytest.raises(TypeError, match=r"execution_backend: expected a name or 'auto'"):
        create_backend_context("opencl", execution_backend=None)  # type: ignore[arg-type]


def test_an_alias_selects_its_spec_and_the_context_holds_the_real_name() -> None:
    cubin = ExecutionBackendSpec("cubin", adapter="tvm_ffi", aliases=("tvm_ffi",))
    register_backend(make_backend(specs=(cubin, ExecutionBackendSpec("cython"))))
    context = create_backend_context("opencl", execution_backend="tvm_ffi")
    assert context.execution_backend is cubin
    assert context.execution_backend.name == "cubin"
    assert create_backend_context("opencl", execution_backend="cubin").execution_backend is cubin
    with pytest.raises(
        ExecutionBackendError,
        match=r"one of \['cubin', 'cython'\] \(or an alias: \{'tvm_ffi': 'cubin'\}\)",
    ):
        create_backend_context("opencl", execution_backend="dlpack")


def test_an_unavailable_alias_says_what_its_spec_needs() -> None:
    cubin = ExecutionBackendSpec(
        "cubin", is_available=Probe(False), install_hint="a launcher", aliases=("tvm_ffi",)
    )
    register_backend(make_backend(specs=(cubin,)))
    with pytest.raises(ExecutionBackendUnavailableError, match=r"'cubin'.*install a launcher"):
        create_backend_context("opencl", execution_backend="tvm_ffi")


def test_ctypes_says_it_was_removed_and_names_the_allowed_backends() -> None:
    register_backend(
        make_backend(specs=(ExecutionBackendSpec("tvm_ffi"), ExecutionBackendSpec("cython")))
    )
    with pytest.raises(ExecutionBackendError) as excinfo:
        create_backend_context("opencl", execution_backend="ctypes")
    message = str(excinfo.value)
    assert "['tvm_ffi', 'cython']" in message
    assert "'ctypes' was removed; 'cython' replaced it" in message


def test_ctypes_on_a_target_without_cython_names_what_to_use_there() -> None:
    register_backend(make_backend(specs=(ExecutionBackendSpec("torch"),)))
    with pytest.raises(
        ExecutionBackendError, match=r"(?s)\['torch'\].*was removed.*use 'torch' here"
    ):
        create_backend_context("opencl", execution_backend="ctypes")


def test_an_unavailable_backend_says_what_to_install() -> None:
    register_backend(
        make_backend(
            specs=(
                ExecutionBackendSpec(
                    "nvrtc",
                    is_available=Probe(False),
                    install_hint="cuda-python (pip install cuda-python)",
                ),
            )
        )
    )
    with pytest.raises(ExecutionBackendUnavailableError, match=r"'nvrtc'.*install cuda-python"):
        create_backend_context("opencl", execution_backend="nvrtc")
    with pytest.raises(
        ExecutionBackendUnavailableError,
        match=r"(?s)no execution backend is available.*cuda-python",
    ):
        create_backend_context("opencl")


def test_spec_target_predicates_limit_what_is_offered() -> None:
    register_backend(
        make_backend(
            specs=(
                ExecutionBackendSpec("nvrtc", supports_target=lambda t: False),
                ExecutionBackendSpec("tvm_ffi"),
            )
        )
    )
    assert create_backend_context("opencl").execution_backend.name == "tvm_ffi"
    with pytest.raises(ExecutionBackendError, match=r"one of \['tvm_ffi'\]"):
        create_backend_context("opencl", execution_backend="nvrtc")


def test_source_only_path_runs_no_compiler(small_module: Any) -> None:
    codegen = CountingCodegen()
    register_backend(
        make_backend(
            device_codegens={"opencl": codegen},
            specs=(
                ExecutionBackendSpec("source", adapter="tvm_ffi"),
                ExecutionBackendSpec("compiled", adapter="tvm_ffi", enable_device_compile=True),
            ),
        )
    )
    result = create_backend_context("opencl", execution_backend="source").build(small_module)
    assert not result.compiled and result.binaries == {}
    assert result.entry_symbol == "k"
    assert (codegen.emitted, codegen.built) == (1, 0)
    compiled = create_backend_context("opencl", execution_backend="compiled").build(small_module)
    assert compiled.compiled and codegen.built == 1


def test_context_members_follow_the_adapter(small_module: Any) -> None:
    register_backend(
        make_backend(
            specs=(ExecutionBackendSpec("fast", adapter="cython"),),
        )
    )
    context = create_backend_context("opencl", execution_backend="fast")
    assert context.adapter == "cython"
    assert context.capabilities == Capabilities()
    assert context.lower(small_module).same_as(small_module)
    assert context.emit_source(small_module).entry_symbol == "k"
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        context.backend = context.backend  # type: ignore[misc]


def test_host_targets() -> None:
    # The descriptor says which targets run on the host: no host_kind = own host.
    register_backend(make_backend("dev", kinds=("opencl",), host_kind="llvm"))
    register_backend(make_backend("host", kinds=("c",)))
    device = create_backend_context("opencl")
    assert str(device.target_host.kind.name) == "llvm"
    assert str(device.target.host.kind.name) == "llvm"
    cpu = create_backend_context("c")
    assert str(cpu.target_host.kind.name) == "c"
    chosen = create_backend_context("opencl", target_host="c")
    assert str(chosen.target.host.kind.name) == "c"


def test_lower_dumps_ir_after_each_stage(tmp_path: Path, small_module: Any) -> None:
    from tl_backend_api import Pipeline, PipelineStage

    order: list[str] = []

    def stage(name: str) -> PipelineStage:
        def apply(mod: Any, target: Any) -> Any:
            order.append(name)
            return mod

        return PipelineStage(name, apply)

    pipe = Pipeline("three", (stage("one"), stage("two"), stage("three")))
    register_backend(make_backend(pipelines={"opencl": pipe}))
    context = create_backend_context("opencl")
    context.lower(small_module, dump_dir=tmp_path)
    assert order == ["one", "two", "three"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "00-input.tir",
        "01-one.tir",
        "02-two.tir",
        "03-three.tir",
    ]
    order.clear()
    context.lower(small_module, start="two", stop="two")
    assert order == ["two"]
    with pytest.raises(
        ValueError, match=r"start: expected one of the stages \['one', 'two', 'three'\]"
    ):
        context.lower(small_module, start="zero")
    with pytest.raises(ValueError, match=r"stop: expected a stage at or after 'three'"):
        context.lower(small_module, start="three", stop="one")
