"""Fixtures shared by the integration tests."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "packages" / "tl-runtime" / "tests"))

import runtime_kernels
from runtime_kernels import (  # noqa: F401 - fixtures shared with other test trees
    _warm_runtime_cache_template,
    warm_runtime_cache,
)

_NETWORK_HINTS = (
    "Could not find a version",
    "Failed to establish",
    "Temporary failure",
    "No matching distribution",
)


@pytest.fixture(scope="session")
def runtime_only_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of one venv per test run holding only tl-runtime, apache-tvm-ffi and numpy.

    Building it (the tl-runtime wheel with its Cython launcher, then pip) takes ~40 s, so
    the xdist workers of one run share it: the first to need it builds it under a file
    lock in the run's common temporary directory, the others wait and reuse it (the
    tests only run it, none modifies it). Skips when the package index cannot be
    reached; any other install failure fails.
    """
    import filelock

    root = runtime_kernels.shared_temp_root(tmp_path_factory)
    directory = root / "runtime-only-venv"
    done_marker = root / "runtime-only-venv.done"
    try:
        with filelock.FileLock(str(root / "runtime-only-venv.lock")):
            if done_marker.is_file():
                return Path(done_marker.read_text())
            if directory.exists():  # a build that failed part-way
                shutil.rmtree(directory)
            python = runtime_kernels.make_runtime_only_venv(directory)
            done_marker.write_text(str(python))
            return python
    except subprocess.CalledProcessError as exc:
        output = f"{exc.stdout}\n{exc.stderr}"
        if any(hint in output for hint in _NETWORK_HINTS):
            pytest.skip(f"cannot install from the package index here: {output.strip()[-300:]}")
        raise AssertionError(f"creating the runtime-only venv failed:\n{output}") from None
