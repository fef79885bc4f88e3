"""Target normalization: option strings, dicts, Targets, aliases, "auto", CPU checks."""

from __future__ import annotations

from typing import Any

import pytest
from tvm.target import Target

from tl_backend_api import (
    AUTO_CPU_TARGET_KIND,
    DeviceProbe,
    TargetError,
    detect_auto_target_kind,
    is_cpu_target,
    normalize_target,
    parse_target_string,
    target_kind,
)


def test_option_strings_become_typed_dicts() -> None:
    config = parse_target_string("cuda -arch=sm_90 -max_num_threads=512 -libs=cudnn,cublas")
    assert config == {
        "kind": "cuda",
        "arch": "sm_90",
        "max_num_threads": 512,
        "libs": ["cudnn", "cublas"],
    }
    target = normalize_target("cuda -arch=sm_90")
    assert str(target.kind.name) == "cuda" and str(target.attrs["arch"]) == "sm_90"
    assert parse_target_string("llvm -fast-math")["fast-math"] is True
    assert parse_target_string("llvm -fast-math=false")["fast-math"] is False


@pytest.mark.parametrize("text", ["c", "llvm", "cuda", "hip", "metal", "webgpu", "opencl"])
def test_plain_kinds_normalize(text: str) -> None:
    expected = "rocm" if text == "hip" else text
    assert target_kind(text) == expected


def test_dicts_targets_and_json() -> None:
    assert str(normalize_target({"kind": "cuda", "arch": "sm_80"}).attrs["arch"]) == "sm_80"
    assert target_kind({"kind": "hip"}) == "rocm"
    existing = Target({"kind": "llvm"})
    assert normalize_target(existing) is existing
    assert target_kind('{"kind": "metal"}') == "metal"
    assert str(normalize_target("nvidia/nvidia-a100").attrs["arch"]) == "sm_80"  # a TVM tag
    with_host = normalize_target("cuda", host="llvm")
    assert str(with_host.host.kind.name) == "llvm"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (3, "expected a tvm.target.Target, a string"),
        ("", "expected a target kind"),
        ("   ", "expected a target kind"),
        ({"arch": "sm_90"}, "non-empty string 'kind'"),
        ("cuda -max_num_threads=many", "expected an integer, got 'many'"),
        ("llvm -fast-math=maybe", "expected true/false"),
        ("cuda arch=sm_90", "-key=value or -flag, got 'arch=sm_90'"),
        ("nosuchkind", "refused by TVM"),
        ("cuda -no_such_option=1", "refused by TVM"),
        ("{not json", "expected valid JSON"),
        ("[1]", "refused by TVM"),
    ],
)
def test_bad_targets_raise_target_error(value: Any, message: str) -> None:
    with pytest.raises(TargetError, match=message):
        normalize_target(value)


def _probe(cuda: bool = False, rocm: bool = False, metal: bool = False) -> DeviceProbe:
    return DeviceProbe(cuda=lambda: cuda, rocm=lambda: rocm, metal=lambda: metal)


@pytest.mark.parametrize(
    ("probe", "kind"),
    [
        (_probe(cuda=True, rocm=True, metal=True), "cuda"),
        (_probe(rocm=True, metal=True), "rocm"),
        (_probe(metal=True), "metal"),
        (_probe(), AUTO_CPU_TARGET_KIND),
    ],
)
def test_auto_prefers_cuda_then_rocm_then_metal_then_cpu(probe: DeviceProbe, kind: str) -> None:
    assert detect_auto_target_kind(probe) == kind
    assert str(normalize_target("auto", device_probe=probe).kind.name) == kind


def test_auto_on_this_machine_is_a_known_kind() -> None:
    assert detect_auto_target_kind() in ("cuda", "rocm", "metal", AUTO_CPU_TARGET_KIND)


def test_cuda_visible_devices_hides_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert DeviceProbe().cuda() is False


@pytest.mark.parametrize(
    ("target", "cpu"),
    [
        ("c", True),
        ("llvm", True),
        ("llvm -num-cores=2", True),
        ({"kind": "c"}, True),
        ("cuda", False),
        ("metal", False),
    ],
)
def test_is_cpu_target_is_true_for_c_and_llvm(target: Any, cpu: bool) -> None:
    assert is_cpu_target(target) is cpu


def test_describe_target_shows_only_what_was_set() -> None:
    from tl_backend_api import describe_target

    assert describe_target(normalize_target("c")) == "'c'"
    assert describe_target(normalize_target("cuda -arch=sm_90")) == "'cuda -arch=sm_90'"
