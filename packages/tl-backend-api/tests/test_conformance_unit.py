"""Conformance: adapters are whatever tl_runtime has installed; target facts are checked."""

from __future__ import annotations

from tl_backend_api_testkit import make_backend

from tl_backend_api import ExecutionBackendSpec, assert_conforms, conformance_problems
from tl_backend_api.conformance import RESERVED_ADAPTER_KEY_PREFIX, installed_adapter_keys


def test_tl_runtimes_own_adapters_are_installed() -> None:
    assert {"tvm_ffi", "cython"} <= installed_adapter_keys()


def test_an_adapter_key_conforms_when_it_is_installed_not_when_it_is_on_a_list() -> None:
    backend = make_backend(specs=(ExecutionBackendSpec("run", adapter="my_launcher"),))
    problems = conformance_problems(backend, adapter_keys={"tvm_ffi", "cython"})
    assert any("adapter 'my_launcher'" in p and "installed in tl_runtime" in p for p in problems)
    assert conformance_problems(backend, adapter_keys={"my_launcher"}) == []


def test_reserved_adapter_keys_are_refused() -> None:
    """Tests name keys under the reserved prefix when they need one nothing installs."""
    key = f"{RESERVED_ADAPTER_KEY_PREFIX}run"
    backend = make_backend(specs=(ExecutionBackendSpec("run", adapter=key),))
    problems = conformance_problems(backend, adapter_keys={key})
    assert any(f"adapter {key!r}" in p and "reserved for tests" in p for p in problems)


def test_target_facts_are_checked() -> None:
    assert_conforms(
        make_backend(
            kinds=("opencl",),
            kind_aliases={"accel": "opencl"},
            auto_kind="opencl",
            is_active=lambda: True,
        )
    )
    broken_probe = make_backend(auto_kind="opencl", is_active=lambda: "yes")
    problems = conformance_problems(broken_probe)
    assert any("is_active(): expected a bool, got str 'yes'" in p for p in problems)
