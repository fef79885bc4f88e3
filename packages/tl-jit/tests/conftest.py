"""Fixtures of tl_jit's unit tests: a private cache root and the fake llvm backend."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh TL_CACHE_DIR (not created yet) with the cache enabled."""
    root = tmp_path / "cache"
    monkeypatch.setenv("TL_CACHE_DIR", str(root))
    monkeypatch.delenv("TL_DISABLE_CACHE", raising=False)
    monkeypatch.delenv("TL_TARGET", raising=False)
    monkeypatch.delenv("TL_EXECUTION_BACKEND", raising=False)
    return root


@pytest.fixture
def fake_backend(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """The fake llvm backend registered in an isolated registry; tl_jit builds with it."""
    import tljit_fake_backend

    import tl_jit.compiler
    from tl_backend_api.registry import isolated_registry, register_backend

    monkeypatch.setattr(
        tl_jit.compiler, "_artifact_builder", lambda: tljit_fake_backend.build_plain_tir_artifact
    )
    with isolated_registry(discover=False):
        register_backend(tljit_fake_backend.fake_backend())
        yield tljit_fake_backend
