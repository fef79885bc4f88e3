"""Fixtures shared by the integration tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "packages" / "tl-runtime" / "tests"))

import runtime_kernels

_NETWORK_HINTS = (
    "Could not find a version",
    "Failed to establish",
    "Temporary failure",
    "No matching distribution",
)


@pytest.fixture(scope="session")
def runtime_only_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of one venv per session holding only tl-runtime, apache-tvm-ffi and numpy.

    Skips when the package index cannot be reached; any other install failure fails.
    """
    directory = tmp_path_factory.mktemp("runtime-only") / "venv"
    try:
        return runtime_kernels.make_runtime_only_venv(directory)
    except subprocess.CalledProcessError as exc:
        output = f"{exc.stdout}\n{exc.stderr}"
        if any(hint in output for hint in _NETWORK_HINTS):
            pytest.skip(f"cannot install from the package index here: {output.strip()[-300:]}")
        raise AssertionError(f"creating the runtime-only venv failed:\n{output}") from None
