"""``ld.lld``: links the AMDGPU object TVM emits into a code object (``.hsaco``)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from tl_backend_api import ToolchainError, ToolchainInfo
from tl_backend_api.gpu.sources import probe_tool_version

_NOT_FOUND = "ld.lld not found: install ROCm (or LLVM's lld) to link AMDGPU code objects"


def _first_line(lines: list[str]) -> str | None:
    """The first line of ``ld.lld --version`` (``LLD 17.0.6 (compatible with GNU linkers)``)."""
    return lines[0] if lines else None


class Lld:
    """`tl_backend_api.Toolchain` over LLVM's ``ld.lld`` (part of ROCm)."""

    @property
    def name(self) -> str:
        """The tool's name."""
        return "ld.lld"

    def executable(self) -> str | None:
        """ld.lld on PATH or in /opt/rocm/llvm/bin, else None."""
        found = shutil.which("ld.lld")
        if found is not None:
            return found
        candidate = Path("/opt/rocm/llvm/bin/ld.lld")
        return str(candidate) if candidate.is_file() else None

    def discover(self) -> ToolchainInfo | None:
        """ld.lld and its version line, or None when it is not installed."""
        return probe_tool_version(self.name, self.executable(), _first_line)

    def compile_shared_object(
        self, sources: Sequence[Path], output: Path, *, options: Sequence[str] = ()
    ) -> Path:
        """Link the AMDGPU objects ``sources`` into the code object ``output``.

        Raises:
            ToolchainError: ld.lld is missing or failed (its message and the first input).
        """
        executable = self.executable()
        first = str(sources[0]) if sources else None
        if executable is None:
            raise ToolchainError(_NOT_FOUND, source_path=first)
        command = (executable, "-shared", *options, *map(str, sources), "-o", str(output))
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise ToolchainError(
                f"ld.lld exited with status {done.returncode}",
                command=command,
                output=done.stderr + done.stdout,
                source_path=first,
            )
        return output
