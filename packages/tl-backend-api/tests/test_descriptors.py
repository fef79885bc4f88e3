"""Backend and ExecutionBackendSpec: validation, defensive copies, read-only mappings, capabilities."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from tl_backend_api_testkit import (
    CountingCodegen,
    make_backend,
    pipeline,
)
from tvm.target import Target

from tl_backend_api import (
    Backend,
    BackendValidationError,
    Capabilities,
    ExecutionBackendSpec,
)


def test_adapter_defaults_to_name() -> None:
    assert ExecutionBackendSpec("cython").adapter == "cython"
    assert ExecutionBackendSpec("fast", adapter="tvm_ffi").adapter == "tvm_ffi"


def test_a_source_only_spec_names_no_adapter() -> None:
    spec = ExecutionBackendSpec("source", adapter=None)
    assert spec.adapter is None


def test_aliases_are_other_names_of_one_spec() -> None:
    spec = ExecutionBackendSpec("cubin", adapter="cuda_driver", aliases=("tvm_ffi",))
    assert spec.aliases == ("tvm_ffi",)
    assert spec.names == ("cubin", "tvm_ffi")
    backend = make_backend(specs=(spec, ExecutionBackendSpec("cython")))
    assert backend.execution_backend("tvm_ffi") is spec
    assert backend.execution_backend("cubin") is spec
    with pytest.raises(KeyError, match="declares no execution backend 'nvrtc'"):
        backend.execution_backend("nvrtc")


@pytest.mark.parametrize(
    ("aliases", "message"),
    [
        ("tvm_ffi", "aliases: expected a sequence of names"),
        (("",), "aliases: expected a non-empty str"),
        (("cubin",), "aliases: expected names other than the spec's own and 'auto'"),
        (("auto",), "aliases: expected names other than the spec's own and 'auto'"),
        (("a", "a"), "aliases: expected distinct names"),
        (("ctypes",), "'ctypes' was removed"),
    ],
)
def test_malformed_aliases_are_refused(aliases: Any, message: str) -> None:
    with pytest.raises(BackendValidationError, match=message):
        ExecutionBackendSpec("cubin", aliases=aliases)


def test_an_alias_may_not_name_another_spec_of_the_backend() -> None:
    specs = (ExecutionBackendSpec("cubin", aliases=("fast",)), ExecutionBackendSpec("fast"))
    with pytest.raises(BackendValidationError, match=r"unique names and aliases, got \['fast'\]"):
        make_backend(specs=specs)


@pytest.mark.parametrize("field", ["name", "adapter"])
def test_ctypes_spec_is_refused(field: str) -> None:
    kwargs: dict[str, Any] = {"name": "x", field: "ctypes"}
    with pytest.raises(BackendValidationError, match=r"'ctypes' was removed.*'cython'"):
        ExecutionBackendSpec(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": ""}, "name: expected a non-empty str"),
        ({"name": "x", "adapter": ""}, "adapter: expected a non-empty str"),
        ({"name": "x", "is_available": True}, "is_available: expected a callable"),
        ({"name": "x", "supports_target": "cuda"}, "supports_target: expected a callable"),
        ({"name": "x", "enable_device_compile": 1}, "enable_device_compile: expected a bool"),
    ],
)
def test_spec_validation(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(BackendValidationError, match=message):
        ExecutionBackendSpec(**kwargs)


def test_mutating_the_callers_dicts_changes_nothing() -> None:
    pipelines: dict[str, Any] = {"opencl": pipeline()}
    codegens: dict[str, Any] = {"opencl": CountingCodegen()}
    callbacks: dict[str, Any] = {"tl_test.cb": lambda: 1}
    specs = [ExecutionBackendSpec("cython")]
    backend = Backend(
        name="copy",
        target_kinds=["opencl"],
        pipelines=pipelines,
        device_codegens=codegens,
        execution_backends=specs,
        callbacks=callbacks,
    )
    snapshot = {f: dict(getattr(backend, f)) for f in ("pipelines", "device_codegens", "callbacks")}
    for d in (pipelines, codegens, callbacks):
        d["intruder"] = object()
    del pipelines["opencl"], codegens["opencl"]
    specs.append(ExecutionBackendSpec("tvm_ffi"))
    for field, before in snapshot.items():
        assert dict(getattr(backend, field)) == before, field
    assert [s.name for s in backend.execution_backends] == ["cython"]
    assert backend.target_kinds == ("opencl",)


@pytest.mark.parametrize("field", ["pipelines", "device_codegens", "callbacks"])
def test_descriptor_mappings_refuse_writes(field: str) -> None:
    backend = make_backend()
    mapping: Any = getattr(backend, field)
    with pytest.raises(TypeError):
        mapping["opencl"] = object()
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        setattr(backend, field, {})


def test_spec_is_frozen() -> None:
    spec = ExecutionBackendSpec("tvm_ffi")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        spec.adapter = "cython"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"name": ""}, "name: expected a non-empty str"),
        ({"target_kinds": ()}, "expected at least one kind"),
        ({"target_kinds": "opencl"}, "expected a sequence of kind names"),
        ({"target_kinds": ("opencl", "opencl")}, "expected unique kinds"),
        ({"target_kinds": ("opencl", "")}, "non-empty str"),
        (
            {"pipelines": {}},
            r"pipelines: expected exactly one per owned kind.*missing \['opencl'\]",
        ),
        (
            {"pipelines": {"opencl": pipeline(), "cuda": pipeline()}},
            r"not owned \['cuda'\]",
        ),
        ({"pipelines": {"opencl": object()}}, r"pipelines\['opencl'\]: expected a PassPipeline"),
        ({"device_codegens": {}}, "device_codegens: expected exactly one per owned kind"),
        ({"execution_backends": ()}, "expected at least one ExecutionBackendSpec"),
        ({"execution_backends": ("tvm_ffi",)}, "expected ExecutionBackendSpec items"),
        (
            {
                "execution_backends": (
                    ExecutionBackendSpec("tvm_ffi"),
                    ExecutionBackendSpec("tvm_ffi", adapter="cython"),
                )
            },
            r"expected unique names and aliases, got \['tvm_ffi'\]",
        ),
        ({"capabilities": {"fp16": True}}, "capabilities: expected a callable"),
        ({"callbacks": {"x": 3}}, r"callbacks\['x'\]: expected a callable"),
        ({"supports_target": "yes"}, "supports_target: expected a callable"),
        ({"callbacks": []}, "callbacks: expected a mapping"),
        ({"toolchains": {"gcc": object()}}, "expected a Toolchain"),
    ],
)
def test_backend_validation(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(BackendValidationError, match=message):
        make_backend(**overrides)


def test_capabilities_are_a_record_or_a_function_of_the_target() -> None:
    fixed = Capabilities(float_dtypes={"float32"})
    assert make_backend(capabilities=fixed).capabilities_for(Target("opencl")) is fixed
    assert make_backend().capabilities_for(Target("opencl")) == Capabilities()
    seen: list[str] = []

    def by_target(target: Target) -> Capabilities:
        seen.append(str(target.kind.name))
        return fixed

    assert make_backend(capabilities=by_target).capabilities_for(Target("opencl")) is fixed
    assert seen == ["opencl"]
    with pytest.raises(TypeError, match=r"expected a tl_backend_api.Capabilities, got str"):
        make_backend(capabilities=lambda t: "fp16").capabilities_for(Target("opencl"))
