"""The dummy backend's toolchain: discovers the Python interpreter, compiles nothing."""

from __future__ import annotations

import platform
import sys
from collections.abc import Sequence
from pathlib import Path

from tl_backend_api import ToolchainError, ToolchainInfo


class DummyPackager:
    """A `Toolchain` that is always present and refuses to compile shared objects."""

    @property
    def name(self) -> str:
        """The tool's name."""
        return "dummy-packager"

    def discover(self) -> ToolchainInfo | None:
        """The running interpreter stands in for a compiler."""
        return ToolchainInfo(self.name, sys.executable, platform.python_version())

    def compile_shared_object(
        self, sources: Sequence[Path], output: Path, *, options: Sequence[str] = ()
    ) -> Path:
        """Always raises: the dummy backend builds no shared objects."""
        raise ToolchainError(
            "the dummy backend builds no shared objects",
            source_path=str(sources[0]) if sources else None,
        )
