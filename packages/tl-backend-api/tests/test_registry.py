"""The registry: registration rules, lazy per-kind discovery, plugin failures, callbacks."""

from __future__ import annotations

from typing import Any

import pytest
import tvm_ffi
from tl_backend_api_testkit import FakeEntryPoint, make_backend
from tvm.target import Target

import tl_backend_api.registry as registry_module
from tl_backend_api import (
    AmbiguousBackendError,
    BackendConflictError,
    BackendNotFoundError,
    PluginImportError,
    discovery_errors,
    get_backend,
    list_backends,
    resolve_backend,
)
from tl_backend_api.registry import isolated_registry, register_backend, registered_kinds

pytestmark = pytest.mark.usefixtures("fresh_registry")


def test_registering_the_same_descriptor_twice_is_a_no_op() -> None:
    backend = make_backend()
    assert register_backend(backend) is backend
    assert register_backend(backend) is backend
    assert registered_kinds() == {"opencl": ("fake",)}
    assert list_backends() == (backend,)


def test_a_different_descriptor_under_a_taken_name_fails_without_override() -> None:
    register_backend(make_backend())
    replacement = make_backend()
    with pytest.raises(
        BackendConflictError, match=r"already registered under the name 'fake'.*override=True"
    ):
        register_backend(replacement)
    assert get_backend("fake") is not replacement
    register_backend(replacement, override=True)
    assert get_backend("fake") is replacement
    assert resolve_backend("opencl") is replacement
    assert registered_kinds() == {"opencl": ("fake",)}


def test_register_refuses_non_backends() -> None:
    with pytest.raises(TypeError, match=r"expected a tl_backend_api.Backend, got dict"):
        register_backend({"name": "x"})  # type: ignore[arg-type]


def test_override_leaves_no_empty_kind_entries_so_lazy_loading_still_runs() -> None:
    from_plugin = make_backend("from-plugin")
    entry_point = FakeEntryPoint("opencl", lambda: from_plugin)
    with isolated_registry([entry_point]):
        register_backend(make_backend("mine", kinds=("opencl",)))
        # Served explicitly: resolving does not consult the entry points.
        assert resolve_backend("opencl").name == "mine"
        assert entry_point.loads == 0
        register_backend(make_backend("mine", kinds=("vulkan",)), override=True)
        assert registered_kinds() == {"vulkan": ("mine",)}
        assert resolve_backend("opencl") is from_plugin
        assert entry_point.loads == 1


def test_resolving_loads_only_that_kinds_entry_points_once() -> None:
    opencl = FakeEntryPoint("opencl", lambda: make_backend("ocl"), dist="tl-codegen-ocl")
    vulkan = FakeEntryPoint("vulkan", lambda: make_backend("vk", kinds=("vulkan",)))
    with isolated_registry([opencl, vulkan]):
        assert resolve_backend("opencl").name == "ocl"
        assert resolve_backend({"kind": "opencl"}).name == "ocl"
        assert (opencl.loads, vulkan.loads) == (1, 0)
        assert resolve_backend("vulkan").name == "vk"
        assert (opencl.loads, vulkan.loads) == (1, 1)
        list_backends()
        assert (opencl.loads, vulkan.loads) == (1, 1)


def test_unknown_kind_with_no_plugin_says_what_is_served() -> None:
    register_backend(make_backend())
    with pytest.raises(
        BackendNotFoundError, match=r"no backend serves target kind 'metal'.*\['opencl'\]"
    ):
        resolve_backend("metal")


def test_a_plugin_that_raises_on_import_is_reported_by_package_and_breaks_no_other_kind() -> None:
    def explode() -> Any:
        raise ImportError("No module named 'vendor_sdk'")

    broken = FakeEntryPoint("vulkan", explode, dist="tl-codegen-broken")
    good = FakeEntryPoint("opencl", lambda: make_backend("ocl"))
    with isolated_registry([broken, good]):
        assert resolve_backend("opencl").name == "ocl"
        assert discovery_errors() == ()  # the broken kind was never asked for
        with pytest.raises(PluginImportError) as excinfo:
            resolve_backend("vulkan")
        message = str(excinfo.value)
        assert "tl-codegen-broken" in message and "vendor_sdk" in message
        assert [b.name for b in list_backends()] == ["ocl"]
        (failure,) = discovery_errors()
        assert failure.distribution == "tl-codegen-broken" and failure.kind == "vulkan"
        assert "ImportError" in failure.error
        assert resolve_backend("opencl").name == "ocl"
        with pytest.raises(BackendNotFoundError, match=r"tl-codegen-broken"):
            get_backend("missing")


def test_an_entry_point_that_names_no_backend_is_reported() -> None:
    odd = FakeEntryPoint("opencl", lambda: {"not": "a backend"}, dist="tl-codegen-odd")
    wrong_kind = FakeEntryPoint("vulkan", lambda: make_backend("ocl-only"), dist="tl-codegen-wrong")
    with isolated_registry([odd, wrong_kind]):
        with pytest.raises(PluginImportError, match=r"tl-codegen-odd.*got dict"):
            resolve_backend("opencl")
        with pytest.raises(PluginImportError, match=r"owns only \['opencl'\]"):
            resolve_backend("vulkan")


def test_two_backends_on_one_kind_without_predicates_is_an_error() -> None:
    register_backend(make_backend("first"))
    with pytest.raises(
        BackendConflictError, match=r"share target kind 'opencl'.*\['first', 'second'\]"
    ):
        register_backend(make_backend("second"))
    with pytest.raises(BackendConflictError, match=r"define none"):
        register_backend(make_backend("third", supports_target=lambda t: True))
    assert registered_kinds() == {"opencl": ("first",)}


def _by_alignment(value: int) -> Any:
    def predicate(target: Target) -> bool:
        return int(target.attrs["image_base_address_alignment"]) == value

    return predicate


def test_shared_kind_resolution_needs_exactly_one_match() -> None:
    a = register_backend(make_backend("align64", supports_target=_by_alignment(64)))
    b = register_backend(make_backend("align32", supports_target=_by_alignment(32)))
    assert resolve_backend("opencl") is a
    assert resolve_backend("opencl -image_base_address_alignment=32") is b
    with pytest.raises(BackendNotFoundError, match=r"\['align64', 'align32'\].*none of them"):
        resolve_backend({"kind": "opencl", "image_base_address_alignment": 16})
    register_backend(make_backend("any", supports_target=lambda t: True))
    with pytest.raises(AmbiguousBackendError, match=r"\['align64', 'any'\].*several accept"):
        resolve_backend("opencl")


def test_a_single_backend_with_a_predicate_can_decline() -> None:
    register_backend(make_backend("picky", supports_target=lambda t: False))
    with pytest.raises(BackendNotFoundError, match=r"none of them accepts"):
        resolve_backend("opencl")


def test_callbacks_register_once_per_backend_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    registrations: list[str] = []
    real = registry_module._register_global

    def counting_register(name: str, function: Any) -> None:
        registrations.append(name)
        real(name, function)

    monkeypatch.setattr(registry_module, "_register_global", counting_register)
    calls: list[int] = []

    def callback(x: int) -> int:
        calls.append(x)
        return x + 1

    name = f"tl_backend_api.test.callback_{id(callback)}"
    backend = make_backend(callbacks={name: callback})
    register_backend(backend)
    assert registrations == []  # not at registration (nor at import)
    for _ in range(3):
        resolve_backend("opencl")
    assert registrations == [name]
    assert tvm_ffi.get_global_func(name)(41) == 42
    assert calls == [41]
    with isolated_registry(discover=False):
        register_backend(backend)
        resolve_backend("opencl")
    assert registrations == [name]  # per process, not per registry


def test_get_backend_lists_known_names() -> None:
    register_backend(make_backend("alpha"))
    with pytest.raises(
        BackendNotFoundError, match=r"no backend named 'beta'; expected one of \['alpha'\]"
    ):
        get_backend("beta")


def test_a_failed_sibling_plugin_warns_but_the_working_one_resolves() -> None:
    def explode() -> Any:
        raise RuntimeError("driver headers missing")

    broken = FakeEntryPoint("opencl", explode, dist="tl-codegen-ocl-broken")
    good = FakeEntryPoint("opencl", lambda: make_backend("ocl"), dist="tl-codegen-ocl")
    with isolated_registry([broken, good]):
        with pytest.warns(RuntimeWarning, match="tl-codegen-ocl-broken.*driver headers missing"):
            assert resolve_backend("opencl").name == "ocl"
        assert [f.distribution for f in discovery_errors()] == ["tl-codegen-ocl-broken"]


def test_an_entry_point_cannot_displace_an_explicit_registration() -> None:
    mine = make_backend("same-name", kinds=("vulkan",))
    theirs = FakeEntryPoint("opencl", lambda: make_backend("same-name"), dist="tl-codegen-other")
    with isolated_registry([theirs]):
        register_backend(mine)
        assert list_backends() == (mine,)
        (failure,) = discovery_errors()
        assert failure.distribution == "tl-codegen-other"
        assert "already registered by another descriptor" in failure.error


def test_concurrent_resolution_loads_the_entry_point_once() -> None:
    import threading

    entry_point = FakeEntryPoint("opencl", lambda: make_backend("ocl"))
    results: list[str] = []
    with isolated_registry([entry_point]):
        threads = [
            threading.Thread(target=lambda: results.append(resolve_backend("opencl").name))
            for _ in range(8)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert results == ["ocl"] * 8
    assert entry_point.loads == 1
