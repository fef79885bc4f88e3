"""Resolving an execution backend to *export* (build here, run elsewhere) versus to run:
a spec that builds without its device (a cubin from nvcc) is usable for export."""

from __future__ import annotations

import pytest
from tl_backend_api_testkit import make_backend

from tl_backend_api import (
    ExecutionBackendSpec,
    ExecutionBackendUnavailableError,
    backend_rows,
    create_backend_context,
    probe_buildable,
)
from tl_backend_api.registry import register_backend

pytestmark = pytest.mark.usefixtures("fresh_registry")


def _never() -> bool:
    return False


def _cubin_like(can_build: bool) -> ExecutionBackendSpec:
    return ExecutionBackendSpec(
        "cubin",
        adapter="never-installed-device-launcher",
        is_available=_never,  # no device here
        can_build=(lambda: True) if can_build else _never,
        install_hint="a GPU",
        build_hint="the device compiler",
    )


def test_a_spec_that_builds_without_its_device_resolves_for_export_only() -> None:
    register_backend(make_backend(specs=(_cubin_like(True),)))
    with pytest.raises(ExecutionBackendUnavailableError, match="install a GPU"):
        create_backend_context("opencl", execution_backend="cubin")
    context = create_backend_context("opencl", execution_backend="cubin", purpose="export")
    assert context.execution_backend.name == "cubin"
    # auto: nothing runs here, so export takes the first spec that builds
    auto = create_backend_context("opencl", purpose="export")
    assert auto.execution_backend.name == "cubin"


def test_a_spec_that_cannot_build_says_what_building_needs() -> None:
    register_backend(make_backend(specs=(_cubin_like(False),)))
    with pytest.raises(ExecutionBackendUnavailableError, match="needs the device compiler"):
        create_backend_context("opencl", execution_backend="cubin", purpose="export")


def test_purpose_is_checked_and_can_build_defaults_to_always() -> None:
    register_backend(make_backend(specs=(ExecutionBackendSpec("tvm_ffi"),)))
    with pytest.raises(ValueError, match="purpose: expected 'run' or 'export'"):
        create_backend_context("opencl", purpose="deploy")  # type: ignore[arg-type]
    assert probe_buildable(ExecutionBackendSpec("plain")) == (True, "")


def test_backend_rows_say_what_building_and_running_need() -> None:
    register_backend(make_backend(specs=(_cubin_like(True),)))
    (row,) = [r for r in backend_rows() if r["execution_backend"] == "cubin"]
    assert row["builds_here"] is True and row["runs_here"] is False
    assert row["build_needs"] == "the device compiler" and row["run_needs"] == "a GPU"
