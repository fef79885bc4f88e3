"""Fixtures of the tl-runtime tests: artifacts built with apache-tvm (tests only)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import runtime_kernels

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


@pytest.fixture(scope="session")
def _warm_runtime_cache_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return runtime_kernels.warm_runtime_cache_template(
        runtime_kernels.shared_temp_root(tmp_path_factory)
    )


@pytest.fixture
def warm_runtime_cache(_warm_runtime_cache_template: Path, tmp_path: Path) -> Path:
    """A private ``TL_RUNTIME_CACHE_DIR`` that already holds the Cython launcher and both
    context helpers: for subprocess tests about something other than building them
    (saves ~5 s of launcher build per subprocess)."""
    directory = tmp_path / "warm-runtime-cache"
    shutil.copytree(_warm_runtime_cache_template, directory)
    return directory
