"""Per-parameter alignment: each tensor is checked against ITS declared alignment.

Element-aligned kernels (what tl-ir kernels declare) take ordinary numpy arrays, which
sit 16 bytes past a 64-byte boundary, without a copy; written params (``output`` and
``inout``) are never copied, so a misaligned or non-contiguous one is refused by name;
a manifest without ``alignment`` keeps meaning 64.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import runtime_kernels as rk

import tl_runtime
from tl_runtime import ArtifactError, ParamSpec
from tl_runtime.checking import ArgumentChecker

Artifact = Callable[..., Path]


def _filled(offset_bytes: int, value: float | None = None, n: int = 1024) -> Any:
    out = rk.aligned_array(np, (n,), "float32", offset_bytes)
    out[...] = np.random.default_rng(offset_bytes).random(n) if value is None else value
    return out


@pytest.fixture
def no_copies(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Makes any alignment copy fail the test (records the param it was for)."""
    copied: list[str] = []

    def refuse(self: ArgumentChecker, spec: ParamSpec, value: Any) -> Any:
        copied.append(spec.name)
        raise AssertionError(f"parameter {spec.name!r} was copied")

    monkeypatch.setattr(ArgumentChecker, "_aligned_copy", refuse)
    yield copied


@pytest.mark.parametrize("offset", [4, 16, 36])
def test_element_aligned_arrays_are_passed_without_copy(
    artifact: Artifact, adapter: str, offset: int, no_copies: list[str]
) -> None:
    kernel = tl_runtime.load(artifact("vadd_elem"), adapter=adapter)
    a, b, c = _filled(offset), _filled(offset + 4, 2.0), _filled(offset + 8, 0.0)
    assert a.ctypes.data % 64 == offset
    kernel(a, b, c)  # C is a caller-provided output: written in place, so never copied
    np.testing.assert_allclose(c, a + 2.0)
    kernel(a, b, c)  # again, through the cached views
    np.testing.assert_allclose(c, a + 2.0)
    assert no_copies == []


def test_inout_update_at_a_16_byte_offset_reaches_the_caller(
    artifact: Artifact, adapter: str, no_copies: list[str]
) -> None:
    kernel = tl_runtime.load(artifact("accumulate"), adapter=adapter)
    assert kernel.params[1].role == "inout" and kernel.params[1].alignment == 4
    a, x = _filled(16), _filled(16, 1.0)
    assert x.ctypes.data % 64 == 16
    kernel(a, x)
    kernel(a, x)
    np.testing.assert_allclose(x, 1.0 + 2 * a, rtol=1e-6)
    assert no_copies == []


def test_a_misaligned_read_only_input_is_still_copied(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("accumulate"), adapter=adapter)
    raw = np.zeros(1024 * 4 + 64, np.uint8)
    a = raw[(-raw.ctypes.data) % 64 + 2 :][: 1024 * 4].view(np.float32)  # 2 bytes off
    a[...] = 3.0
    x = _filled(16, 1.0)
    kernel(a, x)
    np.testing.assert_allclose(x, 4.0)


def test_inout_not_element_aligned_is_refused_by_name(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("accumulate"), adapter=adapter)
    raw = np.zeros(1024 * 4 + 64, np.uint8)
    x = raw[(-raw.ctypes.data) % 64 + 2 :][: 1024 * 4].view(np.float32)
    with pytest.raises(ValueError, match=r"'X': expected data aligned to 4 bytes.*inout"):
        kernel(_filled(0), x)


def test_inout_non_contiguous_is_refused_by_name(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("accumulate"), adapter=adapter)
    x = np.zeros(2048, np.float32)[::2]
    with pytest.raises(ValueError, match=r"'X': expected a C-contiguous array.*in place"):
        kernel(_filled(0), x)
    assert not x.any()


def test_read_only_inout_is_refused_by_name(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("accumulate"), adapter=adapter)
    x = _filled(0, 1.0)
    x.flags.writeable = False
    with pytest.raises(ValueError, match=r"'X': expected a writable array.*inout"):
        kernel(_filled(0), x)


def test_a_manifest_without_alignment_means_64(artifact: Artifact, adapter: str) -> None:
    directory = artifact("vadd")
    data = json.loads((directory / "manifest.json").read_text())
    assert all("alignment" not in p or p["alignment"] == 64 for p in data["params"])
    for entry in data["params"]:
        entry.pop("alignment", None)
    manifest = tl_runtime.Manifest.from_json(data)
    assert [p.alignment for p in manifest.params] == [64, 64, 64]
    kernel = tl_runtime.load(directory, adapter=adapter)
    a, b, c = _filled(16), _filled(16, 1.0), _filled(0, 0.0)
    kernel(a, b, c)  # misaligned-to-64 inputs of a 64-byte kernel: copied, still correct
    np.testing.assert_allclose(c, a + 1.0)
    with pytest.raises(ValueError, match=r"'C': expected data aligned to 64 bytes"):
        kernel(a, b, _filled(16, 0.0))


def test_param_alignment_round_trips_and_is_validated() -> None:
    spec = ParamSpec("X", "float32", shape=(4,), role="inout", alignment=4)
    assert spec.written and spec.to_json()["alignment"] == 4
    assert ParamSpec.from_json(spec.to_json()) == spec
    assert not ParamSpec("A", "float32", shape=(4,)).written
    for bad in (3, 0, -4, 2.0, None):
        with pytest.raises(ArtifactError, match=r"param 'X' alignment: expected a power of two"):
            ParamSpec.from_json({**spec.to_json(), "alignment": bad})


def test_allocated_outputs_honour_an_alignment_above_64() -> None:
    params = (
        ParamSpec("A", "float32", shape=(8,), alignment=4),
        ParamSpec("B", "float32", shape=(8,), role="output", alignment=128),
    )
    manifest = tl_runtime.Manifest(
        name="k", entry_symbol="k", params=params, target={"kind": "llvm"}, library="k.so"
    )
    checker = ArgumentChecker(manifest)
    assert checker.allocation_alignment == 128
    for _ in range(8):
        assert checker.allocate("float32", (8,), None).ctypes.data % 128 == 0


def test_the_full_checker_passes_element_aligned_arrays_through(artifact: Artifact) -> None:
    manifest = tl_runtime.read_manifest(artifact("accumulate"))
    a, x = _filled(16), _filled(48)
    prepared = ArgumentChecker(manifest).prepare([a, x])
    assert prepared.args[0] is a and prepared.args[1] is x
    legacy = tl_runtime.read_manifest(artifact("vadd"))  # declares 64: the input is copied
    copied = ArgumentChecker(legacy).prepare([a, _filled(0), _filled(0)]).args[0]
    assert copied is not a and copied.ctypes.data % 64 == 0


def _exceptions_raised(call: Callable[[], object]) -> list[str]:
    """The exceptions raised in tl_runtime's frames (its modules and generated fast paths)
    while ``call()`` runs, caught or not. (numpy raises and catches a TypeError of its own
    inside ``dtype.name``, which the full checker reads: not counted.)"""
    raised: list[str] = []

    def trace(frame: Any, event: str, arg: Any) -> Any:
        where = frame.f_code.co_filename
        if event == "exception" and ("<tl_runtime" in where or "/tl_runtime/" in where):
            raised.append(f"{arg[0].__name__} in {frame.f_code.co_name} ({where})")
        return trace

    sys.settrace(trace)
    try:
        call()
    finally:
        sys.settrace(None)
    return raised


def test_a_misaligned_input_takes_the_copy_without_raising(
    artifact: Artifact, adapter: str
) -> None:
    """A misaligned input goes to the copying path on every call: correct, and without an
    exception raised and caught on the way (a traceback per call costs tens of us)."""
    kernel = tl_runtime.load(artifact("vadd"), adapter=adapter)  # 64-byte params
    a, b, c = _filled(16), _filled(16, 1.0), _filled(0, 0.0)
    kernel(a, b, c)
    assert _exceptions_raised(lambda: kernel(a, b, c)) == []
    np.testing.assert_allclose(c, a + 1.0)
    a[...] = 5.0
    kernel(a, b, c)  # the same misaligned arrays again: copied afresh
    np.testing.assert_allclose(c, 6.0)


def test_a_read_only_input_takes_the_copy_without_raising(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("vadd_elem"), adapter=adapter)
    a, b, c = _filled(0), _filled(16, 1.0), _filled(0, 0.0)
    a.flags.writeable = False  # numpy cannot export it through DLPack: the full path copies it
    kernel(a, b, c)
    assert _exceptions_raised(lambda: kernel(a, b, c)) == []
    np.testing.assert_allclose(c, a + 1.0)
