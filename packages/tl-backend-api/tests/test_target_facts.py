"""Target facts declared by backends: device probes, "auto", aliases, host, alignment, device types."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from tl_backend_api_testkit import FakeEntryPoint, make_backend
from tvm.target import Target

from tl_backend_api import (
    Backend,
    BackendConflictError,
    BackendNotFoundError,
    BackendValidationError,
    TargetError,
    auto_candidates,
    create_backend_context,
    detect_auto_target_kind,
    normalize_target,
    resolve_target,
    target_kind,
)
from tl_backend_api.descriptors import HOST_DEVICE_TYPE
from tl_backend_api.kinds import is_host_target
from tl_backend_api.registry import isolated_registry, register_backend


def _answer(value: bool) -> Callable[[], bool]:
    return lambda: value


def _host_backend(**extra: Any) -> Backend:
    fields: dict[str, Any] = {"auto_kind": "c", "auto_priority": 0}
    fields.update(extra)
    return make_backend("host", kinds=("c", "llvm"), **fields)


def _device_backend(name: str, kind: str, present: bool, priority: int, **extra: Any) -> Backend:
    return make_backend(
        name,
        kinds=(kind,),
        is_active=_answer(present),
        auto_kind=kind,
        auto_priority=priority,
        host_kind="llvm",
        **extra,
    )


@pytest.mark.parametrize(
    ("present", "expected"),
    [
        ({"dev_a": True, "dev_b": True}, "cuda"),
        ({"dev_a": False, "dev_b": True}, "rocm"),
        ({"dev_a": False, "dev_b": False}, "c"),
    ],
)
def test_auto_picks_the_highest_priority_backend_whose_device_is_present(
    fresh_registry: None, present: dict[str, bool], expected: str
) -> None:
    register_backend(_host_backend())
    register_backend(_device_backend("dev_a", "cuda", present["dev_a"], 30))
    register_backend(_device_backend("dev_b", "rocm", present["dev_b"], 20))
    assert detect_auto_target_kind() == expected
    assert target_kind("auto") == expected


def test_auto_order_is_priority_then_name_and_skips_backends_without_auto_kind(
    fresh_registry: None,
) -> None:
    register_backend(_host_backend())
    register_backend(_device_backend("zeta", "cuda", True, 5))
    register_backend(_device_backend("alpha", "rocm", True, 5))
    register_backend(make_backend("silent", kinds=("webgpu",)))  # no auto_kind
    assert [b.name for b in auto_candidates()] == ["alpha", "zeta", "host"]
    assert detect_auto_target_kind() == "rocm"


def test_auto_walks_backends_found_through_entry_points() -> None:
    device = _device_backend("dev", "metal", True, 10)
    host = _host_backend()
    entry_points = [FakeEntryPoint("c", lambda: host), FakeEntryPoint("metal", lambda: device)]
    with isolated_registry(entry_points):
        assert detect_auto_target_kind() == "metal"


def test_a_probe_that_raises_counts_as_absent(fresh_registry: None) -> None:
    def broken() -> bool:
        raise OSError("driver exploded")

    register_backend(_host_backend())
    register_backend(make_backend("dev", kinds=("cuda",), is_active=broken, auto_kind="cuda"))
    assert detect_auto_target_kind() == "c"


def test_a_probe_answering_a_non_bool_is_a_type_error(fresh_registry: None) -> None:
    register_backend(make_backend("dev", kinds=("cuda",), is_active=lambda: 1, auto_kind="cuda"))
    with pytest.raises(TypeError, match=r"'dev'.is_active\(\): expected a bool, got int 1"):
        detect_auto_target_kind()


def test_auto_without_a_candidate_names_what_it_tried(fresh_registry: None) -> None:
    with pytest.raises(BackendNotFoundError, match=r"target 'auto'.*no backend"):
        resolve_target("auto")
    register_backend(_device_backend("dev", "cuda", False, 3))
    with pytest.raises(BackendNotFoundError, match=r"dev \(kind 'cuda', priority 3\)"):
        detect_auto_target_kind()


def test_aliases_come_from_the_backend_that_declares_them(fresh_registry: None) -> None:
    with pytest.raises(Exception, match="refused by TVM"):
        resolve_target("accel")  # nobody declares it yet
    register_backend(make_backend("dev", kinds=("opencl",), kind_aliases={"accel": "opencl"}))
    assert target_kind("accel -max_num_threads=64") == "opencl"
    assert target_kind({"kind": "accel"}) == "opencl"
    assert target_kind('{"kind": "accel"}') == "opencl"
    resolved = resolve_target("accel -max_num_threads=64", host="llvm")
    assert int(resolved.attrs["max_num_threads"]) == 64 and str(resolved.host.kind.name) == "llvm"
    # normalize_target is syntax only: it knows TVM's kinds, never the registry's aliases.
    with pytest.raises(TargetError, match="refused by TVM"):
        normalize_target("accel")
    with pytest.raises(TargetError, match="'auto' is resolved from the installed backends"):
        normalize_target("auto")


def test_target_syntax_sits_below_the_registry() -> None:
    """tl_backend_api.target imports neither the registry nor what sits on it (no circle)."""
    import ast
    from pathlib import Path

    import tl_backend_api.target as target_module

    tree = ast.parse(Path(target_module.__file__).read_text())
    imported = {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module is not None
    }
    assert not imported & {
        "tl_backend_api.registry",
        "tl_backend_api.kinds",
        "tl_backend_api.descriptors",
    }


def test_aliases_are_found_in_not_yet_loaded_entry_points() -> None:
    aliased = make_backend("dev", kinds=("opencl",), kind_aliases={"accel": "opencl"})
    with isolated_registry([FakeEntryPoint("opencl", lambda: aliased)]):
        assert target_kind("accel") == "opencl"


def test_an_alias_with_two_meanings_is_refused_at_registration(fresh_registry: None) -> None:
    register_backend(make_backend("one", kinds=("opencl",), kind_aliases={"accel": "opencl"}))
    with pytest.raises(BackendConflictError, match=r"alias 'accel'.*'one' declares it"):
        register_backend(make_backend("two", kinds=("vulkan",), kind_aliases={"accel": "vulkan"}))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("is_active", True, "is_active: expected a callable"),
        ("auto_kind", "rocm", r"auto_kind: expected None or one of the owned kinds \['opencl'\]"),
        ("auto_priority", "high", "auto_priority: expected an int, got 'high'"),
        ("auto_priority", True, "auto_priority: expected an int, got True"),
        ("kind_aliases", {"cuda": "opencl"}, "not TVM target kinds, got 'cuda'"),
        ("kind_aliases", {"accel": "vulkan"}, r"kind_aliases\['accel'\]: expected one of"),
        ("kind_aliases", ["accel"], "kind_aliases: expected a mapping"),
        ("host_kind", "nosuchkind", "host_kind: expected None or a TVM target kind"),
        ("argument_alignment", 12, "argument_alignment: expected a power of two.*got 12"),
        ("argument_alignment", 0, "argument_alignment: expected a power of two.*got 0"),
        ("argument_device_types", (), "argument_device_types: expected at least one"),
        ("argument_device_types", (2, 2), "each once, got \\(2, 2\\)"),
        ("argument_device_types", (0,), "positive DLPack device type codes"),
        ("argument_device_types", (True,), "positive DLPack device type codes"),
        ("argument_device_types", 2, "expected a sequence of DLPack device type codes"),
    ],
)
def test_target_facts_are_validated_at_construction(field: str, value: Any, message: str) -> None:
    with pytest.raises(BackendValidationError, match=message):
        make_backend(**{field: value})


def test_defaults_describe_a_backend_running_on_the_host() -> None:
    backend = make_backend()
    assert backend.is_active() is True
    assert backend.auto_kind is None and backend.host_kind is None and backend.runs_on_host
    assert backend.argument_alignment == 1
    assert backend.argument_device_types == (HOST_DEVICE_TYPE,) == (1,)
    device = make_backend(host_kind="llvm", argument_device_types=[2, 13])
    assert device.argument_device_types == (2, 13) and not device.runs_on_host


def test_default_host_comes_from_the_descriptor(fresh_registry: None) -> None:
    register_backend(_host_backend())
    register_backend(_device_backend("dev", "cuda", False, 1))
    on_host = create_backend_context("llvm")
    assert on_host.target_host.kind.name == "llvm" and is_host_target("c")
    device = create_backend_context("cuda")
    assert str(device.target_host.kind.name) == "llvm" and not is_host_target("cuda")
    named = create_backend_context("cuda", target_host="c")
    assert str(named.target_host.kind.name) == "c"
    own_host = create_backend_context(Target({"kind": "cuda"}, host=Target({"kind": "c"})))
    assert str(own_host.target_host.kind.name) == "c"
