"""Builds small native helpers on first use into a per-user cache (locked, atomic, verified).

The cache directory is ``$TL_RUNTIME_CACHE_DIR`` or the platform's user cache dir
(``platformdirs``) plus ``tl-runtime``; it is created private to the user (0700), and a
directory another user owns or can write is refused (`check_private_directory`): code is
loaded from it. Each built file has a ``.sha256`` record beside it; a file that no longer
matches its record (truncated, overwritten) is rebuilt instead of loaded.
The C compiler is ``$TL_RUNTIME_CC``, else ``$CC``, else the first of ``cc``/``gcc``/``clang``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from tl_runtime.errors import NativeBuildError

CACHE_DIR_ENV = "TL_RUNTIME_CACHE_DIR"


class InsecureDirectoryError(NativeBuildError):
    """A directory code would be loaded from is owned or writable by another user."""


def make_private_dirs(path: Path) -> None:
    """Create ``path`` and its missing parents with mode 0700 (whatever the umask)."""
    missing = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=0o700)
        except FileExistsError:
            continue
        os.chmod(directory, 0o700)  # mkdir's mode is masked by the umask


def first_shared_writable(directories: Iterable[Path]) -> tuple[Path, os.stat_result] | None:
    """The first of ``directories`` that every user can write without the sticky bit
    (anyone could replace what is inside it), with its stat; None when there is none.
    Directories that cannot be inspected are skipped."""
    for directory in directories:
        try:
            st = os.stat(directory)
        except OSError:
            continue
        if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
            return directory, st
    return None


def check_private_directory(path: Path, what: str, remedy: str) -> None:
    """Refuse a directory that someone other than this user could have written code into.

    The rule is the one ssh and pip apply: the directory must be owned by the current user
    and writable by nobody else (no group or other write bit); it must not be a symlink
    owned by someone else. Its ancestors must not be writable by others either, unless they
    carry the sticky bit (``/tmp``), where others cannot replace what they do not own.

    Args:
        path: an existing directory.
        what: what the directory is, for the message (e.g. "tl_jit cache root").
        remedy: what the user can do instead, for the message.

    Raises:
        InsecureDirectoryError: naming the directory, its owner and mode, and the remedy.
    """
    if not hasattr(os, "getuid"):  # Windows: no POSIX modes to check
        return
    uid = os.getuid()
    try:
        link = os.lstat(path)
        info = os.stat(path)
    except OSError as exc:
        raise InsecureDirectoryError(f"{what} {path} cannot be inspected: {exc}") from None

    def refuse(where: Path, st: os.stat_result, problem: str) -> InsecureDirectoryError:
        return InsecureDirectoryError(
            f"{what} {path} is not private: {where} {problem} (owner uid {st.st_uid}, mode "
            f"{stat.S_IMODE(st.st_mode):04o}); expected a directory owned by uid {uid} that "
            f"only its owner can write. {remedy}"
        )

    if stat.S_ISLNK(link.st_mode) and link.st_uid not in (uid, 0):
        raise refuse(path, link, "is a symlink owned by another user")
    if not stat.S_ISDIR(info.st_mode):
        raise InsecureDirectoryError(f"{what} {path} is not a directory. {remedy}")
    if info.st_uid != uid:
        raise refuse(path, info, "is owned by another user")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise refuse(path, info, "is writable by other users")
    for parent in Path(os.path.realpath(path)).parents:
        try:
            st = os.stat(parent)
        except OSError:
            continue
        if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
            raise refuse(parent, st, "(a parent) is writable by other users without the sticky bit")
        if st.st_uid not in (uid, 0) and st.st_mode & stat.S_IWGRP:
            raise refuse(parent, st, "(a parent) is writable by another user's group")


_checked_cache_dirs: set[str] = set()


def cache_dir() -> Path:
    """Return the per-user cache directory (created 0700 if missing; checked private).

    The check runs once per directory per process (every kernel load asks for the
    directory; the answer does not change under a running process's feet unless
    someone with the power to chmod it acts, and they could as well replace the code).

    Raises:
        InsecureDirectoryError: the directory is owned or writable by another user.
    """
    override = os.environ.get(CACHE_DIR_ENV)
    if override:
        path = Path(override)
    else:
        import platformdirs

        path = Path(platformdirs.user_cache_dir("tl-runtime", appauthor=False))
    if str(path) in _checked_cache_dirs and path.is_dir():
        return path
    make_private_dirs(path)
    check_private_directory(
        path,
        "the tl-runtime helper cache",
        f"Run chmod 700 on it, or set {CACHE_DIR_ENV} to a private directory.",
    )
    _checked_cache_dirs.add(str(path))
    return path


def _record_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def record_cached_file(path: Path) -> None:
    """Write the ``.sha256`` record of a file just placed in the cache (atomic, 0600)."""
    write_private_text(_record_path(path), _digest(path))


def cached_file_is_intact(path: Path) -> bool:
    """Whether ``path`` exists and matches its ``.sha256`` record (False without a record)."""
    try:
        expected = _record_path(path).read_text(encoding="ascii").strip()
        return path.is_file() and _digest(path) == expected
    except (OSError, UnicodeDecodeError):
        return False


def find_c_compiler() -> list[str] | None:
    """Return the C compiler command (argv prefix), or None when no compiler is found."""
    for var in ("TL_RUNTIME_CC", "CC"):
        value = os.environ.get(var)
        if value:
            import shlex

            argv = shlex.split(value)
            return argv if argv and shutil.which(argv[0]) else None
    for name in ("cc", "gcc", "clang"):
        found = shutil.which(name)
        if found:
            return [found]
    return None


def _run_version(compiler: Sequence[str]) -> str:
    import subprocess  # only when the compiler is new to this cache: a hit spawns nothing

    try:
        proc = subprocess.run(
            [*compiler, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout.splitlines()[0] if proc.stdout else ""


def _compiler_identity(compiler: Sequence[str], root: Path) -> str:
    """``"<argv>|<first line of --version>"``, the version remembered per compiler binary.

    Running ``--version`` costs a process spawn on every helper look-up (every process
    that loads a kernel), so its answer is kept in ``root`` under a name derived from
    the argv and the resolved binary's path, size and mtime: a changed or replaced
    compiler binary gets a new entry and is asked again.
    """
    try:
        binary = os.path.realpath(shutil.which(compiler[0]) or compiler[0])
        info = os.stat(binary)
        fingerprint = f"{' '.join(compiler)}|{binary}|{info.st_size}|{info.st_mtime_ns}"
    except OSError:
        return f"{' '.join(compiler)}|{_run_version(compiler)}"
    memo = root / f"compiler-{hashlib.sha256(fingerprint.encode()).hexdigest()[:20]}.txt"
    try:
        version = memo.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        version = _run_version(compiler)
        with contextlib.suppress(OSError):  # a read-only cache: ask again next time
            write_private_text(memo, version)
    return f"{' '.join(compiler)}|{version}"


def write_private_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temp file + rename), mode 0600.

    Raises:
        OSError: the file could not be written (the temp file is removed).
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


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
    root = cache_dir()
    digest = hashlib.sha256()
    for src in sources:
        digest.update(src.read_bytes())
    digest.update(_compiler_identity(compiler, root).encode())
    digest.update(repr([list(f) for f in flag_sets]).encode())
    digest.update(key_extra.encode())
    digest.update(sys.platform.encode())
    target = root / f"{name}-{digest.hexdigest()[:20]}.so"
    if cached_file_is_intact(target):
        return target
    import shlex
    import subprocess
    import tempfile

    import filelock

    with filelock.FileLock(str(target) + ".lock", timeout=600):
        if cached_file_is_intact(target):
            return target
        # Absent, or damaged (truncated, overwritten, record lost): rebuild it. The old file
        # is replaced by rename, so a process that has it mapped keeps its own copy.
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
                os.chmod(tmp, 0o600)
                os.replace(tmp, target)
                record_cached_file(target)
                return target
            os.unlink(tmp)
            errors.append(f"$ {shlex.join(cmd)}\n{proc.stderr.strip()}")
        raise NativeBuildError(
            f"building {name} from {', '.join(map(str, sources))} failed:\n" + "\n".join(errors)
        )
