"""The CUDA backend's device probe (`Backend.is_active`) behind target="auto"."""

from __future__ import annotations

import sys

import pytest

from tl_codegen_cuda.backend import BACKEND
from tl_codegen_cuda.device_presence import cuda_device_present


@pytest.mark.parametrize("hidden", ["-1", "", " "])
def test_cuda_visible_devices_hides_every_device(
    monkeypatch: pytest.MonkeyPatch, hidden: str
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", hidden)
    assert cuda_device_present() is False
    assert BACKEND.device_present() is False


def test_the_probe_never_imports_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert isinstance(cuda_device_present(), bool)
    assert "torch" not in sys.modules
