"""tl-codegen-cpu test setup."""

from __future__ import annotations

import shutil

import pytest

requires_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
