"""The CPU backend refuses target options it would not apply: it builds for the machine
it runs on, and an ignored option was recorded in the manifest anyway (an "aarch64" or
"no AVX" artifact holding host x86-64 code, byte for byte)."""

from __future__ import annotations

import platform

import pytest

from tl_backend_api.target import normalize_target
from tl_codegen_cpu.codegen import check_target_options
from tl_ir.errors import UnsupportedError

HOST = platform.machine().lower()


@pytest.mark.parametrize(
    "target",
    ["llvm", "c", "llvm -mcpu=x86-64", "llvm -mcpu=native", f"llvm -mtriple={HOST}-linux-gnu"],
)
def test_what_the_build_applies_is_accepted(target: str) -> None:
    kind = target.split()[0]
    check_target_options(kind, normalize_target(target))


@pytest.mark.parametrize(
    ("target", "named"),
    [
        ("llvm -mattr=-avx512f,-avx2", "mattr="),
        ("llvm -mcpu=x86-64 -mattr=+avx2", "mattr="),
        ("llvm -opt-level=1", "opt-level=1"),
        ("llvm -num-cores=4", "num-cores=4"),
        ("c -mcpu=x86-64", "mcpu='x86-64'"),
    ],
)
def test_an_option_the_build_ignores_is_refused_by_name(target: str, named: str) -> None:
    kind = target.split()[0]
    with pytest.raises(UnsupportedError, match=rf"target {kind}: .*{named}.* would not be applied"):
        check_target_options(kind, normalize_target(target))


def test_a_triple_for_another_architecture_is_refused() -> None:
    other = "x86_64" if HOST == "aarch64" else "aarch64"
    with pytest.raises(
        UnsupportedError, match=rf"mtriple='{other}-linux-gnu' would not be applied"
    ):
        check_target_options("llvm", normalize_target(f"llvm -mtriple={other}-linux-gnu"))
