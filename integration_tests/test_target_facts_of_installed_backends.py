"""What the installed backends declare about their targets, as the core reads it."""

from __future__ import annotations

import pytest

from tl_backend_api import (
    auto_candidates,
    create_backend_context,
    detect_auto_target_kind,
    get_backend,
    target_kind,
)
from tl_backend_api.kinds import is_host_target


def test_auto_tries_the_gpu_backends_before_the_cpu_fallback() -> None:
    order = [b.auto_kind for b in auto_candidates() if b.name in ("cuda", "hip", "metal", "cpu")]
    assert order == ["cuda", "rocm", "metal", "c"]
    assert "webgpu" not in [b.name for b in auto_candidates()]  # nothing here runs WGSL
    chosen = detect_auto_target_kind()
    present = [b.auto_kind for b in auto_candidates() if b.device_present()]
    assert chosen == present[0]


def test_hip_is_an_alias_the_hip_backend_declares() -> None:
    assert dict(get_backend("hip").kind_aliases) == {"hip": "rocm"}
    assert target_kind("hip") == "rocm"
    assert create_backend_context("hip", execution_backend="source").backend.name == "hip"


@pytest.mark.parametrize(
    ("name", "host", "alignment", "device_types"),
    [
        ("cpu", None, 1, (1,)),
        ("cuda", "llvm", 16, (2,)),
        ("hip", "llvm", 16, (10,)),
        ("metal", "llvm", 16, (8,)),
        ("webgpu", "llvm", 16, (15,)),
    ],
)
def test_each_backend_declares_host_alignment_and_device_types(
    name: str, host: str | None, alignment: int, device_types: tuple[int, ...]
) -> None:
    backend = get_backend(name)
    assert backend.host_kind == host and backend.runs_on_host is (host is None)
    assert backend.argument_alignment == alignment
    assert backend.argument_device_types == device_types
    for kind in backend.target_kinds:
        assert is_host_target(kind) is (host is None)
