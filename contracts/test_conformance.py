"""Conformance tests run against every installed backend (``tl.backends`` entry points)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from tl_backend_api import (
    Backend,
    DeviceCodegen,
    ExecutionBackendSpec,
    HostCodegen,
    PassPipeline,
    UnknownFeatureError,
    assert_conforms,
    discovery_errors,
    list_backends,
    probe_availability,
    resolve_backend,
)

#: Test plugins that fail to import on purpose (integration_tests/plugins).
DELIBERATELY_BROKEN = {"tl-backend-broken"}

BACKENDS = list_backends()


def _static_module() -> ModuleType:
    path = Path(__file__).with_name("backend_protocols.py")
    spec = importlib.util.spec_from_file_location("tl_contracts_backend_protocols", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ids(backend: Backend) -> str:
    return backend.name


def test_at_least_one_backend_is_installed() -> None:
    assert BACKENDS, "no tl.backends entry point loaded; is tl-backend-dummy installed?"


def test_no_plugin_fails_to_load_except_the_deliberately_broken_one() -> None:
    unexpected = [
        f.describe() for f in discovery_errors() if f.distribution not in DELIBERATELY_BROKEN
    ]
    assert unexpected == []


def test_every_installed_backend_is_checked_statically() -> None:
    checked = _static_module().STATICALLY_CHECKED
    missing = sorted(b.name for b in BACKENDS if b.name not in checked)
    assert missing == [], (
        f"add annotated assignments for {missing} to contracts/backend_protocols.py"
    )
    for backend in BACKENDS:
        assert checked[backend.name] is backend


@pytest.mark.parametrize("backend", BACKENDS, ids=_ids)
def test_backend_passes_the_conformance_checks(backend: Backend) -> None:
    assert_conforms(backend)


@pytest.mark.parametrize("backend", BACKENDS, ids=_ids)
def test_every_owned_kind_resolves_to_the_backend(backend: Backend) -> None:
    if backend.supports_target is not None:
        pytest.skip("predicate-gated backends are resolved by their own targets")
    for kind in backend.target_kinds:
        assert resolve_backend(kind) is backend


@pytest.mark.parametrize("backend", BACKENDS, ids=_ids)
def test_parts_satisfy_the_protocols_at_run_time(backend: Backend) -> None:
    for kind in backend.target_kinds:
        assert isinstance(backend.pipelines[kind], PassPipeline)
        codegen = backend.device_codegens[kind]
        assert isinstance(codegen, DeviceCodegen)
        assert callable(codegen.emit_source) and callable(codegen.build)
    for host_codegen in backend.host_codegens.values():
        assert isinstance(host_codegen, HostCodegen)


@pytest.mark.parametrize("backend", BACKENDS, ids=_ids)
def test_every_availability_probe_returns_a_bool(backend: Backend) -> None:
    for spec in backend.execution_backends:
        assert isinstance(spec, ExecutionBackendSpec)
        assert isinstance(spec.is_available(), bool), spec.name
        assert isinstance(probe_availability(spec)[0], bool)


@pytest.mark.parametrize("backend", BACKENDS, ids=_ids)
def test_supports_raises_on_unknown_features(backend: Backend) -> None:
    with pytest.raises(UnknownFeatureError):
        backend.supports("certainly-not-a-feature", backend.target_kinds[0])
    for feature in backend.features:
        assert isinstance(backend.supports(feature, backend.target_kinds[0]), bool)


@pytest.mark.parametrize("backend", BACKENDS, ids=_ids)
def test_no_execution_backend_is_ctypes(backend: Backend) -> None:
    names = {s.name for s in backend.execution_backends} | {
        s.adapter for s in backend.execution_backends
    }
    assert "ctypes" not in names
