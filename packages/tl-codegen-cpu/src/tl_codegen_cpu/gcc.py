"""The system C compiler (gcc or ``$CC``): the flags of the C path and `GccToolchain`.

`GccToolchain.compile_shared_object` is the only place a compiler runs; a
missing or failing compiler raises ``tl_backend_api.ToolchainError`` carrying
its own message, the command and the source path.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import tvm
import tvm_ffi

from tl_backend_api import ToolchainError, ToolchainInfo

#: Flags for the C path (before include paths, sources and output). The two
#: after -fPIC bound gcc's complete unrolling: on the micro-kernel's many
#: 16-lane loops, plain -O3 spends 10 s in register allocation (docs/cpu.md).
#: -fno-trapping-math lets gcc if-convert float selects (`a < b ? a : b`), which
#: the branch-free exp of `cpu-vectorize-exp` needs to vectorize; it changes no
#: value (only whether floating-point exception flags may be raised speculatively).
C_FLAGS: tuple[str, ...] = (
    "-O3",
    "-march=native",
    "-fopenmp",
    "-shared",
    "-fPIC",
    "--param=max-completely-peeled-insns=0",
    "-fno-tree-loop-distribution",
    "-fno-trapping-math",
)

#: Environment variable naming the C compiler (default: ``gcc``).
CC_ENV = "CC"

#: How GNU ld reports a symbol nothing defines (quotes differ between locales).
_UNDEFINED_REFERENCE = re.compile(r"undefined reference to [`'\u2018]([^'`\u2019]+)['\u2019]")


def c_compiler() -> str:
    """Return the C compiler command: ``$CC`` when set, else ``gcc``."""
    return os.environ.get(CC_ENV) or "gcc"


@functools.lru_cache(maxsize=16)
def _tool_version(executable: str) -> str:
    try:
        completed = subprocess.run(
            [executable, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    first_line = (completed.stdout or completed.stderr).strip().splitlines()
    return first_line[0] if first_line else "unknown"


def tvm_include_dirs() -> tuple[str, ...]:
    """The include directories TVM-generated C needs (TVM's and tvm-ffi's headers)."""
    dirs = [
        Path(tvm.__file__).parent / "include",
        Path(tvm_ffi.__file__).parent / "include",
    ]
    return tuple(str(d) for d in dirs if d.is_dir())


@dataclass(frozen=True)
class GccToolchain:
    """The system C compiler used for both CPU paths (gcc or ``$CC``).

    Args:
        executable: the compiler command; ``None`` means `c_compiler()`.
    """

    executable: str | None = None

    @property
    def name(self) -> str:
        """The tool's name (the command's base name)."""
        return Path(self.command).name

    @property
    def command(self) -> str:
        """The compiler command that runs."""
        return self.executable or c_compiler()

    def discover(self) -> ToolchainInfo | None:
        """Find the compiler on PATH; ``None`` when it is not installed."""
        found = shutil.which(self.command)
        if found is None:
            return None
        return ToolchainInfo(name=self.name, executable=found, version=_tool_version(found))

    def compile_shared_object(
        self,
        sources: Sequence[Path],
        output: Path,
        *,
        options: Sequence[str] = (),
    ) -> Path:
        """Compile or link ``sources`` (C files or objects) into the shared object ``output``.

        Args:
            sources: the input files.
            output: the shared object to write.
            options: compiler flags placed before the inputs (``-shared -fPIC``
                are always added).

        Returns:
            ``output``.

        Raises:
            ToolchainError: the compiler is missing or failed; carries the
                compiler's own message, the command and the first source's path.
        """
        source_paths = [Path(s) for s in sources]
        first_source = str(source_paths[0]) if source_paths else None
        info = self.discover()
        if info is None:
            raise ToolchainError(
                f"C compiler {self.command!r} not found on PATH; install gcc or set "
                f"${CC_ENV} to a C compiler",
                source_path=first_source,
            )
        flags = list(options)
        for required in ("-shared", "-fPIC"):
            if required not in flags:
                flags.append(required)
        command = (info.executable, *flags, *(str(s) for s in source_paths), "-o", str(output))
        completed = self._run(command, first_source)
        if completed.returncode != 0:
            raise ToolchainError(
                f"{self.name} failed with exit code {completed.returncode}",
                command=command,
                output=(completed.stderr + completed.stdout),
                source_path=first_source,
            )
        return Path(output)

    def check_symbols_resolve(
        self,
        library: Path,
        providers: Sequence[Path] = (),
        *,
        source_path: str | None = None,
    ) -> None:
        """Fail unless every symbol ``library`` uses is defined somewhere it will be loaded.

        Links a throwaway program against ``library`` and ``providers`` (the
        libraries the loading process supplies, such as tvm-ffi's): the linker
        then reports each function the library calls that neither it, the
        providers nor the system libraries it names (libc, libm, libgomp)
        define. Without this check such a library loads lazily and kills the
        process at the first call of the missing function.

        Raises:
            ToolchainError: naming the unresolved symbols (typically a
                ``T.call_extern`` of a function that does not exist), or the
                linker's own message when the check link fails otherwise.
        """
        info = self.discover()
        if info is None:
            raise ToolchainError(
                f"C compiler {self.command!r} not found on PATH; install gcc or set "
                f"${CC_ENV} to a C compiler",
                source_path=source_path,
            )
        with tempfile.TemporaryDirectory(prefix="symbol-check-", dir=library.parent) as scratch:
            # An executable with no code of its own (no start files, entry 0): only the
            # link matters, and linking an executable reports undefined symbols of the
            # shared libraries it is linked against.
            command = (
                info.executable,
                "-nostartfiles",
                "-Wl,-e,0",
                "-Wl,--no-as-needed",
                str(library),
                *(str(p) for p in providers),
                "-o",
                str(Path(scratch) / "symbol-check"),
            )
            completed = self._run(command, source_path)
        if completed.returncode == 0:
            return
        output = completed.stderr + completed.stdout
        missing = sorted(set(_UNDEFINED_REFERENCE.findall(output)))
        if missing:
            raise ToolchainError(
                f"the kernel library {library.name} calls {', '.join(missing)}, which nothing "
                "defines (not the kernel, tvm-ffi, libc, libm or OpenMP): is it a "
                "T.call_extern of a function that does not exist?",
                command=command,
                output=output,
                source_path=source_path,
            )
        raise ToolchainError(
            f"{self.name} could not link a check program against {library.name} "
            f"(exit code {completed.returncode})",
            command=command,
            output=output,
            source_path=source_path,
        )

    def _run(
        self, command: Sequence[str], source_path: str | None
    ) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise ToolchainError(
                f"{self.name} could not run: {error}",
                command=tuple(command),
                source_path=source_path,
            ) from error


def tvm_ffi_library() -> Path:
    """The tvm-ffi shared library: what a kernel library may leave for the loading process."""
    import tvm_ffi.libinfo

    return Path(tvm_ffi.libinfo.find_libtvm_ffi())
