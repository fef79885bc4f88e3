"""Target normalization: option strings, dicts, Targets, aliases (declared by installed backends)."""

from __future__ import annotations

from typing import Any

import pytest
from tvm.target import Target

from tl_backend_api import TargetError, normalize_target, target_kind
from tl_backend_api.target import parse_target_string


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


def test_describe_target_shows_only_what_was_set() -> None:
    from tl_backend_api.target import describe_target

    assert describe_target(normalize_target("c")) == "'c'"
    assert describe_target(normalize_target("cuda -arch=sm_90")) == "'cuda -arch=sm_90'"
