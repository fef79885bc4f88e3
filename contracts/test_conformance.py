"""Conformance tests run against every installed backend (``tl.backends`` entry points).

Backends are found, not listed: every check is parametrized over
`list_backends()`, and the static check reads each backend package's own
``contract`` module (contracts/checks.py). A new backend package needs no
edit here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tvm.target import Target

from tl_backend_api import (
    Backend,
    Capabilities,
    DeviceCodegen,
    ExecutionBackendSpec,
    PassPipeline,
    assert_conforms,
    discovery_errors,
    list_backends,
    probe_availability,
    resolve_backend,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contracts.checks import backend_packages, contract_problems, import_contract_module

BACKENDS = list_backends()
PACKAGES = backend_packages(BACKENDS)


def _ids(backend: Backend) -> str:
    return backend.name


def test_at_least_one_backend_is_installed() -> None:
    assert BACKENDS, "no tl.backends entry point loaded; is any tl-codegen-* package installed?"


def test_no_plugin_fails_to_load() -> None:
    assert [f.describe() for f in discovery_errors()] == []


@pytest.mark.parametrize("backend", BACKENDS, ids=_ids)
def test_backend_comes_from_exactly_one_package(backend: Backend) -> None:
    assert len(PACKAGES[backend.name]) == 1, (
        f"backend {backend.name!r}: expected its tl.backends entry points in one package, "
        f"got {sorted(PACKAGES[backend.name])}"
    )


@pytest.mark.parametrize("backend", BACKENDS, ids=_ids)
def test_own_contract_module_covers_every_part(backend: Backend) -> None:
    (package,) = PACKAGES[backend.name]
    module = import_contract_module(package)
    assert contract_problems(backend, module) == []
    check_types = getattr(module, "check_types", None)
    if callable(check_types):
        check_types()  # the annotated assignments also run without error


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


@pytest.mark.parametrize("backend", BACKENDS, ids=_ids)
def test_every_availability_probe_returns_a_bool(backend: Backend) -> None:
    for spec in backend.execution_backends:
        assert isinstance(spec, ExecutionBackendSpec)
        assert isinstance(spec.is_available(), bool), spec.name
        assert isinstance(probe_availability(spec)[0], bool)


@pytest.mark.parametrize("backend", BACKENDS, ids=_ids)
def test_capabilities_answer_a_record_on_every_owned_kind(backend: Backend) -> None:
    for kind in backend.target_kinds:
        assert isinstance(backend.capabilities_for(Target({"kind": kind})), Capabilities)


@pytest.mark.parametrize("backend", BACKENDS, ids=_ids)
def test_no_execution_backend_is_ctypes(backend: Backend) -> None:
    names = {s.name for s in backend.execution_backends} | {
        s.adapter for s in backend.execution_backends
    }
    assert "ctypes" not in names
