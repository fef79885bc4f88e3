"""Kernels written in tl-ir run on ordinary (not 64-byte aligned) numpy arrays without copies.

tl-ir tensor params declare element alignment, the artifact records it per param, and
tl-runtime checks each pointer against it: an array 16 bytes past a 64-byte boundary
(where numpy's large arrays usually start) goes to the kernel as is, a kernel that
updates an argument in place (``inout``) updates the caller's array, and an ``inout``
array that is not element-aligned or not contiguous is refused by name.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import integration_tests.kernels.suite as suite
import tl_runtime
from integration_tests.kernels import ALL_KERNELS, load
from tl_backend_api import create_backend_context
from tl_runtime.checking import ArgumentChecker
from tl_runtime.manifest import ParamSpec

OFFSET = 16
"""Bytes past a 64-byte boundary: where glibc-mmapped numpy arrays usually start."""


def offset_copy(value: Any, offset: int = OFFSET) -> Any:
    """A copy of a numpy array whose data starts ``offset`` bytes past a 64-byte boundary."""
    if not isinstance(value, np.ndarray):
        return value
    raw = np.empty(value.nbytes + 128, dtype=np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    out = raw[start : start + value.nbytes].view(value.dtype).reshape(value.shape)
    out[...] = value
    assert out.ctypes.data % 64 == offset
    return out


@pytest.fixture
def no_copies(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Fails any call that would copy an argument for alignment."""
    copied: list[str] = []

    def refuse(self: ArgumentChecker, spec: ParamSpec, value: Any) -> Any:
        copied.append(spec.name)
        raise AssertionError(f"{self.manifest.name}: parameter {spec.name!r} was copied")

    monkeypatch.setattr(ArgumentChecker, "_aligned_copy", refuse)
    yield copied


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``get(name, index=0, target="llvm")``: the artifact of a suite case (built once)."""
    root = tmp_path_factory.mktemp("alignment-artifacts")
    contexts: dict[str, Any] = {}
    built: dict[str, Path] = {}

    def get(name: str, index: int = 0, target: str = "llvm") -> Path:
        module = load(name)
        key = suite.build_key(name, module.CASES[index], target)
        if key not in built:
            if target not in contexts:
                contexts[target] = create_backend_context(target, execution_backend="tvm_ffi")
            built[key] = suite.build_case(contexts[target], module, module.CASES[index], root / key)
        return built[key]

    return get


CASES = [
    pytest.param(name, index, id=f"{name}-{index}")
    for name in ALL_KERNELS
    for index in range(len(load(name).CASES))
]


@pytest.mark.parametrize("target", ["c", "llvm"])
@pytest.mark.parametrize(("name", "index"), CASES)
def test_every_suite_case_runs_on_16_byte_offset_arrays_without_copies(
    artifacts: Any,
    name: str,
    index: int,
    target: str,
    no_copies: list[str],
) -> None:
    module = load(name)
    artifact = artifacts(name, index, target)
    for param in tl_runtime.read_manifest(artifact).params:
        if param.kind == "tensor":
            assert param.alignment == np.dtype(param.dtype).itemsize, param
    for adapter in ("tvm_ffi", "cython"):
        problems = suite.run_case(
            artifact, module, module.CASES[index], adapter, place_input=offset_copy
        )
        assert problems == [], adapter
    assert no_copies == []


@pytest.mark.parametrize("adapter", ["tvm_ffi", "cython"])
def test_atomic_sum_updates_a_caller_accumulator_in_place(
    artifacts: Any, adapter: str, no_copies: list[str]
) -> None:
    module = load("atomic_sum")
    case = module.CASES[0]["args"]
    kernel = tl_runtime.load(artifacts("atomic_sum"), adapter=adapter)
    assert [p.role for p in kernel.params] == ["input", "inout"]
    a = offset_copy(np.random.default_rng(0).standard_normal((case["M"], case["N"]), "float32"))
    out = np.empty(case["M"] + 16, "float32")[4 : 4 + case["M"]]  # 16 bytes into the buffer
    out[...] = 1.0
    address = out.ctypes.data
    kernel(a, out)
    assert out.ctypes.data == address
    np.testing.assert_allclose(out, 1.0 + a.sum(axis=1), rtol=1e-4, atol=1e-4)
    if address % 64 == 0:  # the allocator happened to align it: check the offset case too
        shifted = offset_copy(np.zeros(case["M"], "float32"))
        kernel(a, shifted)
        np.testing.assert_allclose(shifted, a.sum(axis=1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("adapter", ["tvm_ffi", "cython"])
def test_atomic_sum_refuses_an_accumulator_it_could_only_copy(artifacts: Any, adapter: str) -> None:
    case = load("atomic_sum").CASES[0]["args"]
    kernel = tl_runtime.load(artifacts("atomic_sum"), adapter=adapter)
    a = np.zeros((case["M"], case["N"]), "float32")
    raw = np.zeros(case["M"] * 4 + 64, np.uint8)
    odd = raw[1 : 1 + case["M"] * 4].view("float32")  # 1 byte off: not element aligned
    with pytest.raises(ValueError, match=r"parameter 'out': expected data aligned to 4 bytes"):
        kernel(a, odd)
    strided = np.zeros(2 * case["M"], "float32")[::2]
    with pytest.raises(ValueError, match=r"parameter 'out': expected a C-contiguous array"):
        kernel(a, strided)
