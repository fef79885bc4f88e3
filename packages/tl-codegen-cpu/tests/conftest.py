"""tl-codegen-cpu test setup: every test here needs a C compiler (gcc or $CC)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip this package's tests, and only them, where no C compiler is installed."""
    if shutil.which(os.environ.get("CC") or "gcc") is not None:
        return
    skip = pytest.mark.skip(reason="no C compiler (gcc or $CC) on PATH")
    for item in items:
        if _HERE in Path(str(item.fspath)).parents:
            item.add_marker(skip)


# importlib mode puts no test directory on sys.path; the helpers have unique names.
sys.path.insert(0, str(_HERE))
