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
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tl_jit import env
from tl_jit.errors import CacheError

if TYPE_CHECKING:
    import tl_runtime

LOCK_TIMEOUT_S = 900.0
"""How long a process waits for another one building the same key before giving up."""

_KINDS = ("kernels", "frontend", "autotune", "locks", "tmp")


class CacheWarning(UserWarning):
    """A cache entry was damaged and is being rebuilt, or the cache could not be written."""


def _make_private_dir(path: Path) -> None:
    """Create ``path`` (and parents) with mode 0700 for the directories created here."""
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

    def _dir(self, kind: str) -> Path:
        return self.root / kind

    def _ensure(self, kind: str) -> Path:
        directory = self._dir(kind)
        if not directory.is_dir():
            try:
                _make_private_dir(directory)
            except OSError as exc:
                raise CacheError(
                    f"cache directory {directory} cannot be created: {exc}; set "
                    f"{env.CACHE_DIR_ENV} to a writable directory or {env.DISABLE_CACHE_ENV}=1"
                ) from None
        return directory

    # ------------------------------------------------------------ kernels
    def entry_path(self, key: str) -> Path:
        """Where the artifact of ``key`` lives (whether or not it exists)."""
        return self._dir("kernels") / key

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
                malformed file) and was removed.

        Raises:
            everything `tl_runtime.load` raises for an intact entry.
        """
        path = self.entry_path(key)
        if not (path / "manifest.json").is_file():
            if path.exists():
                self.discard(key, "it has no manifest.json")
            return None
        import tl_runtime

        try:
            tl_runtime.read_manifest(path, verify=True)
        except (tl_runtime.ArtifactError, tl_runtime.SchemaVersionError) as exc:
            self.discard(key, str(exc))
            return None
        return tl_runtime.load(path, adapter=adapter)

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
        if not path.exists():
            return
        # Rename first so that no reader sees a half-deleted entry.
        trash = self._ensure("tmp") / f"trash-{uuid.uuid4().hex}"
        try:
            os.rename(path, trash)
        except OSError:
            trash = path
        shutil.rmtree(trash, ignore_errors=True)

    def _lock(self, key: str) -> Any:
        import filelock

        locks = self._ensure("locks")
        return filelock.FileLock(str(locks / f"{key}.lock"), timeout=LOCK_TIMEOUT_S)

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
                if final.exists():
                    if check(final):
                        return final
                    self._remove_tree(final)
                staging = self._ensure("tmp") / f"{key[:16]}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
                try:
                    build(staging)
                    os.rename(staging, final)
                finally:
                    if staging.exists():
                        shutil.rmtree(staging, ignore_errors=True)
                return final
        except filelock.Timeout:
            raise CacheError(
                f"timed out after {LOCK_TIMEOUT_S:.0f} s waiting for the lock of cache entry "
                f"{key[:16]}... (another process is compiling it, or a stale lock remains in "
                f"{self._dir('locks')})"
            ) from None

    # ------------------------------------------------------------ JSON records
    def read_record(self, kind: str, key: str) -> dict[str, Any] | None:
        """The JSON record ``<kind>/<key>.json`` (``frontend`` or ``autotune``), or None."""
        path = self._dir(kind) / f"{key}.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def write_record(self, kind: str, key: str, record: dict[str, Any]) -> None:
        """Write the JSON record atomically (temp file + rename); failures only warn."""
        try:
            directory = self._ensure(kind)
            tmp = directory / f".{key}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
            tmp.write_text(json.dumps(record, sort_keys=True), encoding="utf-8")
            os.replace(tmp, directory / f"{key}.json")
        except (OSError, CacheError, TypeError, ValueError) as exc:
            warnings.warn(f"tl_jit cache: cannot write {kind} record: {exc}", CacheWarning, 2)

    # ------------------------------------------------------------ maintenance
    def info(self) -> CacheInfo:
        """Counts and size of what the cache holds."""

        def count(kind: str, suffix: str | None) -> int:
            directory = self._dir(kind)
            if not directory.is_dir():
                return 0
            return sum(
                1
                for p in directory.iterdir()
                if (p.suffix == suffix if suffix else p.is_dir()) and not p.name.startswith(".")
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
        """Remove every entry and record; returns how many kernel entries were removed."""
        removed = self.info().kernels
        for kind in _KINDS:
            directory = self._dir(kind)
            if directory.exists():
                shutil.rmtree(directory, ignore_errors=True)
        return removed


def default_cache() -> KernelCache:
    """The cache at ``TL_CACHE_DIR`` (or the per-user default), read from the environment now."""
    return KernelCache(env.cache_root())


def info() -> CacheInfo:
    """What the default cache holds (see `CacheInfo`)."""
    return default_cache().info()


def clear() -> int:
    """Empty the default cache; returns the number of kernel entries removed."""
    return default_cache().clear()
