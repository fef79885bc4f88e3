"""Fixtures of the tl-runtime tests: artifacts built with apache-tvm (tests only)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import runtime_kernels
from runtime_kernels import (  # noqa: F401 - fixtures shared with other test trees
    _warm_runtime_cache_template,
    warm_runtime_cache,
)

ADAPTERS = ["tvm_ffi", "cython"]


@pytest.fixture(params=ADAPTERS)
def adapter(request: pytest.FixtureRequest) -> str:
    """Each CPU adapter in turn."""
    return str(request.param)


@pytest.fixture
def artifact() -> Callable[..., Path]:
    """``artifact(kernel, **options)``: a shared, cached artifact directory (do not modify)."""
    return runtime_kernels.cached_artifact


@pytest.fixture
def artifact_copy(tmp_path: Path) -> Callable[..., Path]:
    """``artifact_copy(kernel, **options)``: a private copy the test may modify."""

    def make(kernel: str, **options: object) -> Path:
        source = runtime_kernels.cached_artifact(kernel, **options)
        target = tmp_path / kernel
        shutil.copytree(source, target)
        return target

    return make
