"""Builds small native helpers on first use into a per-user cache (locked, atomic).

The cache directory is ``$TL_RUNTIME_CACHE_DIR`` or the platform's user cache dir
(``platformdirs``) plus ``tl-runtime``; it is created private to the user (0700).
The C compiler is ``$TL_RUNTIME_CC``, else ``$CC``, else the first of ``cc``/``gcc``/``clang``.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tl_runtime.errors import NativeBuildError


def cache_dir() -> Path:
    """Return the per-user cache directory (created 0700 if missing)."""
    override = os.environ.get("TL_RUNTIME_CACHE_DIR")
    if override:
        path = Path(override)
    else:
        import platformdirs

        path = Path(platformdirs.user_cache_dir("tl-runtime", appauthor=False))
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def find_c_compiler() -> list[str] | None:
    """Return the C compiler command (argv prefix), or None when no compiler is found."""
    for var in ("TL_RUNTIME_CC", "CC"):
        value = os.environ.get(var)
        if value:
            argv = shlex.split(value)
            return argv if argv and shutil.which(argv[0]) else None
    for name in ("cc", "gcc", "clang"):
        found = shutil.which(name)
        if found:
            return [found]
    return None


def _compiler_identity(compiler: Sequence[str]) -> str:
    try:
        proc = subprocess.run(
            [*compiler, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
        version = proc.stdout.splitlines()[0] if proc.stdout else ""
    except (OSError, subprocess.TimeoutExpired):
        version = ""
    return f"{' '.join(compiler)}|{version}"


def build_shared_library(
    name: str,
    sources: Sequence[Path],
    flag_sets: Sequence[Sequence[str]],
    *,
    key_extra: str = "",
) -> Path:
    """Compile ``sources`` into ``<cache>/<name>-<key>.so`` unless already cached.

    The key hashes the sources' content, the compiler identity, the flag sets and
    ``key_extra``. The build runs under a file lock and lands atomically (temp + rename),
    so concurrent processes are safe. Each flag set is tried in order until one links
    (e.g. with ``-fopenmp`` first, then without).

    Args:
        name: the library's base name.
        sources: C source files.
        flag_sets: alternative compiler flag lists (the common ``-shared -fPIC`` is added).
        key_extra: extra text that must change the cache key (e.g. include dirs).

    Returns:
        The path of the built (or cached) shared library.

    Raises:
        NativeBuildError: no C compiler, or every flag set failed (the message holds the
            compiler's own output and the source path).
    """
    compiler = find_c_compiler()
    if compiler is None:
        raise NativeBuildError(
            f"building {name} needs a C compiler: none found (set CC or TL_RUNTIME_CC, "
            "or install gcc/clang)"
        )
    digest = hashlib.sha256()
    for src in sources:
        digest.update(src.read_bytes())
    digest.update(_compiler_identity(compiler).encode())
    digest.update(repr([list(f) for f in flag_sets]).encode())
    digest.update(key_extra.encode())
    digest.update(sys.platform.encode())
    root = cache_dir()
    target = root / f"{name}-{digest.hexdigest()[:20]}.so"
    if target.exists():
        return target
    import filelock

    with filelock.FileLock(str(target) + ".lock", timeout=600):
        if target.exists():
            return target
        errors = []
        for flags in flag_sets:
            fd, tmp = tempfile.mkstemp(dir=root, prefix=f".{name}.", suffix=".so")
            os.close(fd)
            cmd = [*compiler, *flags, "-shared", "-fPIC", *map(str, sources), "-o", tmp]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
            except (OSError, subprocess.TimeoutExpired) as exc:
                errors.append(f"$ {shlex.join(cmd)}\n{exc}")
                os.unlink(tmp)
                continue
            if proc.returncode == 0:
                os.replace(tmp, target)
                return target
            os.unlink(tmp)
            errors.append(f"$ {shlex.join(cmd)}\n{proc.stderr.strip()}")
        raise NativeBuildError(
            f"building {name} from {', '.join(map(str, sources))} failed:\n" + "\n".join(errors)
        )
