"""``nvcc``: discovery, version, and compiling CUDA C to a cubin or a shared object."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from tl_backend_api import ToolchainError, ToolchainInfo
from tl_backend_api.gpu.sources import probe_tool_version

#: Environment variable naming the nvcc to use (default: ``nvcc`` on PATH, then
#: ``$CUDA_HOME/bin/nvcc``).
NVCC_ENV = "TL_NVCC"


def _release_line(lines: list[str]) -> str | None:
    """The last line of ``nvcc --version`` naming the release (``... release 12.4, V12.4.131``)."""
    releases = [line for line in lines if "release" in line]
    return releases[-1].strip() if releases else None


class Nvcc:
    """`tl_backend_api.Toolchain` over NVIDIA's ``nvcc``."""

    @property
    def name(self) -> str:
        """The tool's name."""
        return "nvcc"

    def executable(self) -> str | None:
        """The nvcc path, or None when there is none."""
        explicit = os.environ.get(NVCC_ENV)
        if explicit:
            return shutil.which(explicit)
        found = shutil.which("nvcc")
        if found is not None:
            return found
        home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
        if home:
            candidate = Path(home) / "bin" / "nvcc"
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
        return None

    def discover(self) -> ToolchainInfo | None:
        """nvcc and its release line, or None when it is not installed."""
        return probe_tool_version(self.name, self.executable(), _release_line)

    def _require_executable(self, source: str | None) -> str:
        executable = self.executable()
        if executable is None:
            raise ToolchainError(
                "nvcc not found: install the CUDA toolkit or set TL_NVCC / CUDA_HOME",
                source_path=source,
            )
        return executable

    def _run(self, command: Sequence[str], source: str | None) -> None:
        try:
            done = subprocess.run(list(command), capture_output=True, text=True, check=False)
        except OSError as exc:
            raise ToolchainError(
                f"nvcc could not be started: {exc}", command=tuple(command), source_path=source
            ) from None
        if done.returncode != 0:
            raise ToolchainError(
                f"nvcc exited with status {done.returncode}",
                command=tuple(command),
                output=done.stderr + done.stdout,
                source_path=source,
            )

    def compile_cubin(self, source: Path, output: Path, arch: str) -> Path:
        """Compile the CUDA C file ``source`` to the cubin ``output`` for ``arch`` (``sm_90``).

        Raises:
            ToolchainError: nvcc is missing or failed (its message and the source path).
        """
        executable = self._require_executable(str(source))
        command = [executable, "-cubin", f"-arch={arch}", "-O3", "-o", str(output), str(source)]
        self._run(command, str(source))
        return output

    def compile_fatbin(self, source: Path, output: Path, arch: str) -> Path:
        """Compile ``source`` to a fatbin holding SASS for ``arch`` and its PTX (which the
        driver JIT-compiles on newer GPUs).

        Raises:
            ToolchainError: nvcc is missing or failed (its message and the source path).
        """
        executable = self._require_executable(str(source))
        number = arch.removeprefix("sm_")
        gencode = f"arch=compute_{number},code=[sm_{number},compute_{number}]"
        command = [executable, "-fatbin", "-gencode", gencode, "-O3", "-o", str(output)]
        self._run([*command, str(source)], str(source))
        return output

    def compile_shared_object(
        self, sources: Sequence[Path], output: Path, *, options: Sequence[str] = ()
    ) -> Path:
        """Compile ``sources`` into the shared object ``output`` (host code plus kernels).

        Raises:
            ToolchainError: nvcc is missing or failed (its message and the source path).
        """
        first = str(sources[0]) if sources else None
        executable = self._require_executable(first)
        command = [
            executable,
            "-shared",
            "-Xcompiler",
            "-fPIC",
            "-O3",
            *options,
            *map(str, sources),
            "-o",
            str(output),
        ]
        self._run(command, first)
        return output
