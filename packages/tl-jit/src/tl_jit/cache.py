"""The disk cache: compiled kernels as tl-runtime artifacts, keyed by sha256 (docs/cache.md).

Layout under the root (``TL_CACHE_DIR`` or the per-user cache dir, mode 0700)::

    kernels/<ir key>/        a tl-runtime artifact (manifest.json + library + sources)
    frontend/<key>.json      front-end memo: jit function + arguments + options -> ir key
    autotune/<key>.json      autotuning results (JSON, never pickle)
    locks/<ir key>.lock      file locks serializing builds of one key
    tmp/                     artifacts being written (renamed into kernels/ when complete)

An entry appears only by ``os.rename`` of a complete directory, under the
key's file lock, so readers never see half an entry and concurrent builders of
one key leave exactly one. A reader that finds a damaged entry (tl_runtime's
hash check fails) discards it with a warning and the caller rebuilds it.
Nothing here imports tvm.

Trust: the cache loads native code, so the root and its directories must be owned by
this user and writable by nobody else (refused otherwise, like ssh and pip do). Keys are
sha256 hex digests, never paths; an entry must record the key it is found under; a
record must name the key it was written for.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tl_jit import env
from tl_jit.cache_files import (
    make_private_dir,
    make_private_tree,
    pid_alive,
    read_regular_file,
)
from tl_jit.errors import CacheError

if TYPE_CHECKING:
    import tl_runtime

LOCK_TIMEOUT_S = 900.0
"""How long a process waits for another one building the same key before giving up."""

_KINDS = ("kernels", "frontend", "autotune", "locks", "tmp")

_KEY_PATTERN = re.compile(r"[0-9a-f]{64}")

ENTRY_KEY_FIELD = "tl_jit.cache_key"
"""The manifest ``versions`` field in which an entry records the ir key it was built for."""

_RECORD_KEY_FIELD = "key"
"""The field in which a JSON record records the key it was written for."""


class CacheWarning(UserWarning):
    """A cache entry was damaged and is being rebuilt, or the cache could not be written."""


def is_cache_key(key: object) -> bool:
    """Whether ``key`` has the form of a cache key: 64 lowercase hex digits (a sha256)."""
    return isinstance(key, str) and _KEY_PATTERN.fullmatch(key) is not None


def _require_key(key: object, what: str = "key") -> str:
    if not is_cache_key(key):
        raise CacheError(
            f"cache {what}: expected a sha256 hex digest (64 lowercase hex digits), got {key!r}"
        )
    assert isinstance(key, str)
    return key


@dataclass(frozen=True)
class CacheInfo:
    """What ``info()`` reports.

    Attributes:
        root: the cache root.
        disabled: whether ``TL_DISABLE_CACHE`` is set.
        kernels: number of compiled-kernel entries.
        frontend_entries: number of front-end memo entries.
        autotune_entries: number of autotuning results.
        size_bytes: total size of the files under the root.
    """

    root: Path
    disabled: bool
    kernels: int
    frontend_entries: int
    autotune_entries: int
    size_bytes: int

    def format(self) -> str:
        """A few human-readable lines (what ``tl cache info`` prints)."""
        return "\n".join(
            [
                f"cache root:       {self.root}",
                f"disabled:         {'yes (TL_DISABLE_CACHE)' if self.disabled else 'no'}",
                f"kernels:          {self.kernels}",
                f"front-end memos:  {self.frontend_entries}",
                f"autotune results: {self.autotune_entries}",
                f"size:             {self.size_bytes / 1e6:.2f} MB",
            ]
        )


class KernelCache:
    """One cache root. Cheap to create; directories are made on first write.

    Args:
        root: the cache root directory.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._checked = False

    def _dir(self, kind: str) -> Path:
        return self.root / kind

    def check_root(self) -> None:
        """Refuse a root (or a directory under it) that another user owns or can write.

        Checked once per `KernelCache` before anything is read from or written to it; a
        root that does not exist yet passes (it is created 0700) unless a directory it
        would be created in is writable by every user without the sticky bit.

        Raises:
            CacheError: naming the directory, its owner and mode, and what to do.
        """
        if self._checked:
            return
        from tl_runtime.errors import NativeBuildError
        from tl_runtime.native_build import check_private_directory

        remedy = (
            f"Run chmod 700 on it, set {env.CACHE_DIR_ENV} to a private directory, or "
            f"set {env.DISABLE_CACHE_ENV}=1"
        )
        if os.path.lexists(self.root):
            try:
                check_private_directory(self.root, "the tl_jit cache root", remedy)
                for kind in _KINDS:
                    directory = self._dir(kind)
                    if os.path.islink(directory):
                        raise CacheError(
                            f"the tl_jit cache directory {directory} is a symlink; expected a "
                            f"directory inside the cache root. {remedy}"
                        )
                    if directory.exists():
                        check_private_directory(directory, "the tl_jit cache directory", remedy)
            except NativeBuildError as exc:
                raise CacheError(str(exc)) from None
        else:
            self._check_future_parents(remedy)
        self._checked = True

    def _check_future_parents(self, remedy: str) -> None:
        """A root to be created: refuse it under a directory that every user can write
        without the sticky bit (anyone could replace the root once it is made there)."""
        if not hasattr(os, "getuid"):  # Windows: no POSIX modes to check
            return
        probe = Path(os.path.abspath(self.root)).parent
        while not os.path.lexists(probe) and probe != probe.parent:
            probe = probe.parent
        from tl_runtime.native_build import first_shared_writable

        real = Path(os.path.realpath(probe))
        shared = first_shared_writable((real, *real.parents))
        if shared is not None:
            parent, st = shared
            raise CacheError(
                f"the tl_jit cache root {self.root} would be created inside {parent}, "
                f"which every user can write without the sticky bit (mode "
                f"{stat.S_IMODE(st.st_mode):04o}), so anyone could replace it; "
                f"expected a root no other user can write. {remedy}"
            )

    def _ensure(self, kind: str) -> Path:
        self.check_root()
        directory = self._dir(kind)
        if not directory.is_dir():
            try:
                make_private_dir(directory)
            except OSError as exc:
                raise CacheError(
                    f"cache directory {directory} cannot be created: {exc}; set "
                    f"{env.CACHE_DIR_ENV} to a writable directory or {env.DISABLE_CACHE_ENV}=1"
                ) from None
        return directory

    # ------------------------------------------------------------ kernels
    def entry_path(self, key: str) -> Path:
        """Where the artifact of ``key`` lives (whether or not it exists).

        Raises:
            CacheError: ``key`` is not a sha256 hex digest (keys are never paths).
        """
        return self._dir("kernels") / _require_key(key)

    def load(self, key: str, adapter: str | None = None) -> tl_runtime.Kernel | None:
        """Load the entry of ``key``; None when absent or damaged (a damaged one is discarded).

        Integrity (manifest, every file's sha256) is checked first: an entry failing it is
        damaged. An intact entry that cannot be loaded here (a source-only artifact, an
        adapter this machine lacks) is not damaged: that error propagates.

        Args:
            key: the ir key.
            adapter: adapter key to load with instead of the manifest's.

        Warns:
            CacheWarning: the entry failed the integrity check (hash mismatch, missing or
                malformed file, a symlink, an entry recording another key) and was removed.

        Raises:
            CacheError: ``key`` is not a sha256 hex digest, or the root is not private.
            everything `tl_runtime.load` raises for an intact entry.
        """
        path = self.entry_path(key)
        self.check_root()
        if not os.path.lexists(path):
            return None
        problem = self.entry_problem(path, key)
        if problem is not None:
            self.discard(key, problem)
            return None
        import tl_runtime

        return tl_runtime.load(path, adapter=adapter)

    @staticmethod
    def entry_problem(path: Path, key: str) -> str | None:
        """Why the entry directory ``path`` is not an intact entry of ``key``; None if it is.

        Intact: a directory (not a symlink) whose manifest parses, whose files all match
        the manifest's sha256 and whose manifest records ``key`` as the key it was
        built for. `load` discards an entry with a problem; the compile path passes
        this to `get_or_build` so an entry found under the lock is held to the same check.
        """
        if os.path.islink(path):
            return "it is a symlink (entries are directories inside the cache)"
        if not (path / "manifest.json").is_file():
            return "it has no manifest.json"
        import tl_runtime

        try:
            manifest = tl_runtime.read_manifest(path, verify=True)
        except (tl_runtime.ArtifactError, tl_runtime.SchemaVersionError) as exc:
            return str(exc)
        except RecursionError:
            return "its manifest.json is nested too deeply"
        recorded = manifest.versions.get(ENTRY_KEY_FIELD)
        if recorded != key:
            return f"its manifest records {ENTRY_KEY_FIELD}={recorded!r}, not the key {key}"
        return None

    def discard(self, key: str, reason: str) -> None:
        """Remove the entry of ``key`` with a `CacheWarning` giving ``reason``."""
        warnings.warn(
            f"tl_jit cache entry {key[:16]}... is damaged and will be rebuilt: {reason}",
            CacheWarning,
            stacklevel=3,
        )
        path = self.entry_path(key)
        with self._lock(key):
            self._remove_tree(path)

    def _remove_tree(self, path: Path) -> None:
        if not os.path.lexists(path):
            return
        # Rename first so that no reader sees a half-deleted entry.
        trash = self._ensure("tmp") / f"trash-{uuid.uuid4().hex}"
        try:
            os.rename(path, trash)
        except OSError:
            trash = path
        try:
            directory = stat.S_ISDIR(os.lstat(trash).st_mode)
        except FileNotFoundError:
            return
        if directory:
            shutil.rmtree(trash, ignore_errors=True)
        else:  # a link (never what it points to), a file, a FIFO: rmtree would open it
            with contextlib.suppress(FileNotFoundError):
                os.unlink(trash)

    def _lock(self, key: str) -> Any:
        import filelock

        locks = self._ensure("locks")
        path = locks / f"{_require_key(key)}.lock"
        with contextlib.suppress(FileNotFoundError):
            mode = os.lstat(path).st_mode
            if not stat.S_ISREG(mode):
                # Not a lock file (a directory, a link, a FIFO put there): no process can
                # hold it as a lock, so it is removed, as a damaged entry would be.
                warnings.warn(
                    f"tl_jit cache: removing {path}: expected a lock file, got "
                    f"{'a directory' if stat.S_ISDIR(mode) else 'a special file or link'}",
                    CacheWarning,
                    stacklevel=3,
                )
                if stat.S_ISDIR(mode):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)
        return filelock.FileLock(str(path), timeout=LOCK_TIMEOUT_S, mode=0o600)

    def get_or_build(
        self,
        key: str,
        build: Callable[[Path], object],
        *,
        is_valid: Callable[[Path], bool] | None = None,
    ) -> Path:
        """Return the entry of ``key``, building it with ``build(tmp_dir)`` if it is missing.

        ``build`` writes a complete artifact into the (absent) directory it is given;
        the directory is renamed into place under the key's file lock, so several
        processes building one key at once leave exactly one entry and build it once.

        Args:
            key: the ir key.
            build: writes the artifact into the given directory.
            is_valid: checks an existing entry (default: it has a manifest.json);
                an invalid one is replaced.

        Raises:
            CacheError: the root is not writable, or the lock timed out.
            whatever ``build`` raises (nothing is left behind).
        """
        import filelock

        final = self.entry_path(key)
        check = is_valid or (lambda path: (path / "manifest.json").is_file())
        self._ensure("kernels")
        try:
            with self._lock(key):
                if os.path.lexists(final):
                    if not os.path.islink(final) and check(final):
                        return final
                    self._remove_tree(final)
                # `clear()` never removes tmp/ or kernels/ under a running build; a directory
                # removed by other means (rm -rf) is recreated and the build tried once more.
                for attempt in (1, 2):
                    staging = (
                        self._ensure("tmp") / f"{key[:16]}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
                    )
                    try:
                        build(staging)
                        make_private_tree(staging)
                        self._ensure("kernels")
                        os.rename(staging, final)
                        return final
                    except FileNotFoundError:
                        if attempt == 2 or self._dir("tmp").is_dir():
                            raise
                    finally:
                        if os.path.lexists(staging):
                            shutil.rmtree(staging, ignore_errors=True)
                raise AssertionError("unreachable")  # pragma: no cover
        except filelock.Timeout:
            raise CacheError(
                f"timed out after {LOCK_TIMEOUT_S:.0f} s waiting for the lock of cache entry "
                f"{key[:16]}... (another process is compiling it, or a stale lock remains in "
                f"{self._dir('locks')})"
            ) from None

    # ------------------------------------------------------------ JSON records
    def read_record(self, kind: str, key: str) -> dict[str, Any] | None:
        """The JSON record ``<kind>/<key>.json`` (``frontend`` or ``autotune``), or None.

        A record that is unreadable, not a JSON object, written for another key (copied
        or renamed), nested too deeply, or (``frontend``) whose ``ir_key`` is not a sha256
        hex digest is treated as absent.

        Raises:
            CacheError: ``key`` is not a sha256 hex digest, or the root is not private.
        """
        path = self._dir(kind) / f"{_require_key(key)}.json"
        self.check_root()
        try:
            data = json.loads(read_regular_file(path).decode("utf-8"))
        except (OSError, ValueError, RecursionError):
            return None
        if not isinstance(data, dict) or data.get(_RECORD_KEY_FIELD) != key:
            return None
        if kind == "frontend" and not is_cache_key(data.get("ir_key")):
            warnings.warn(
                f"tl_jit cache: ignoring front-end record {path}: its ir_key "
                f"{data.get('ir_key')!r} is not a sha256 hex digest",
                CacheWarning,
                2,
            )
            return None
        return data

    def write_record(self, kind: str, key: str, record: dict[str, Any]) -> None:
        """Write the JSON record atomically (temp file + rename, 0600); failures only warn.

        The record is stored with the key it is written for, which `read_record` checks.
        """
        try:
            directory = self._ensure(kind)
            tmp = directory / f".{_require_key(key)}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
            text = json.dumps({**record, _RECORD_KEY_FIELD: key}, sort_keys=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, directory / f"{key}.json")
        except (OSError, CacheError, TypeError, ValueError) as exc:
            warnings.warn(f"tl_jit cache: cannot write {kind} record: {exc}", CacheWarning, 2)

    # ------------------------------------------------------------ maintenance
    def info(self) -> CacheInfo:
        """Counts and size of what the cache holds.

        Raises:
            CacheError: the root exists but cannot be used (a file, another user's, or
                writable by others): "0 kernels" would hide why nothing is ever cached.
        """
        if os.path.lexists(self.root):
            self.check_root()

        def count(kind: str, suffix: str | None) -> int:
            directory = self._dir(kind)
            if not directory.is_dir():
                return 0
            # Only what a look-up would read: records are regular files (a FIFO in
            # their place is an absent record), entries are directories (not links).
            return sum(
                1
                for p in directory.iterdir()
                if not p.name.startswith(".")
                and (
                    (p.suffix == suffix and p.is_file() and not p.is_symlink())
                    if suffix
                    else (p.is_dir() and not p.is_symlink())
                )
            )

        size = 0
        if self.root.is_dir():
            for directory, _, files in os.walk(self.root):
                for name in files:
                    try:
                        size += os.stat(os.path.join(directory, name)).st_size
                    except OSError:
                        continue
        return CacheInfo(
            root=self.root,
            disabled=env.cache_disabled(),
            kernels=count("kernels", None),
            frontend_entries=count("frontend", ".json"),
            autotune_entries=count("autotune", ".json"),
            size_bytes=size,
        )

    def clear(self) -> int:
        """Remove every entry and record; returns how many kernel entries were removed.

        Safe while other processes use the cache: entries are renamed aside before they
        are deleted, the directories themselves stay, builds in progress (their staging
        directories in ``tmp/`` and their lock files) are left alone, and a process that
        has a library loaded keeps its mapping.
        """
        if not os.path.lexists(self.root):
            return 0
        self.check_root()  # a root that is a file (or FIFO) is refused, not "0 removed"
        removed = 0
        kernels = self._dir("kernels")
        if kernels.is_dir():
            for entry in list(kernels.iterdir()):
                if entry.name.startswith("."):
                    continue
                self._remove_tree(entry)
                removed += 1
        for kind in ("frontend", "autotune"):
            directory = self._dir(kind)
            if directory.is_dir():
                for record in list(directory.iterdir()):
                    with contextlib.suppress(FileNotFoundError):
                        if record.is_dir() and not record.is_symlink():
                            shutil.rmtree(record, ignore_errors=True)
                        else:
                            record.unlink()
        tmp = self._dir("tmp")
        if tmp.is_dir():
            for leftover in list(tmp.iterdir()):
                if not self._in_use(leftover.name):
                    self._discard_leftover(leftover)
        return removed

    @staticmethod
    def _in_use(name: str) -> bool:
        """Whether a ``tmp/`` name is the staging directory of a build still running."""
        parts = name.split("-")
        if len(parts) == 3 and parts[1].isdigit():
            return pid_alive(int(parts[1]))
        return False

    @staticmethod
    def _discard_leftover(path: Path) -> None:
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISDIR(os.lstat(path).st_mode):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)


def default_cache() -> KernelCache:
    """The cache at ``TL_CACHE_DIR`` (or the per-user default), read from the environment now."""
    return KernelCache(env.cache_root())


def info() -> CacheInfo:
    """What the default cache holds (see `CacheInfo`)."""
    return default_cache().info()


def clear() -> int:
    """Empty the default cache; returns the number of kernel entries removed."""
    return default_cache().clear()
