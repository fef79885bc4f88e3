"""Where an artifact's code is loaded from: a private copy of the bytes that were verified.

`tl_runtime.load` reads the artifact once (`tl_runtime.manifest.snapshot.read_artifact`)
and checks every byte against the manifest. The code is then loaded from a copy of those
very bytes, in this process's private directory (0700, removed at exit), named by the
digest of the artifact's file hashes; never from the artifact's own path, because:

* a deploy that swaps directories by rename (blue/green), or replaces a file, between the
  check and the ``dlopen`` would otherwise run the other library under the first
  manifest (a wrong answer, or a crash when the signatures differ);
* the dynamic loader caches libraries by path: a second ``dlopen`` of a path returns the
  library already mapped even when the file at that path was replaced since. A path
  named by content always holds the same content.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from tl_runtime.fork_safety import ForkSafeLock
from tl_runtime.manifest import MANIFEST_NAME, Manifest

_lock = ForkSafeLock()
_staging_root: Path | None = None


_PREFIX = "tl-runtime-load-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def sweep_dead_staging(directory: str | None = None) -> list[Path]:
    """Remove the private load directories (this user's) of processes that are gone.

    Each is removed at its process's exit, but a process that ends without running exit
    handlers (``os._exit``: a forked ``multiprocessing`` child; a worker killed by its
    pool) leaves its copies behind; its pid is in the directory's name. A pid now held by
    another process keeps its directory (never removed while in doubt).

    Returns:
        The directories removed.
    """
    base = Path(directory if directory is not None else tempfile.gettempdir())
    removed: list[Path] = []
    uid = os.getuid() if hasattr(os, "getuid") else None
    try:
        entries = list(base.glob(_PREFIX + "*"))
    except OSError:
        return removed
    for entry in entries:
        pid_text = entry.name[len(_PREFIX) :].split("-", 1)[0]
        if not pid_text.isdigit() or int(pid_text) == os.getpid():
            continue
        try:
            info = entry.lstat()
        except OSError:
            continue
        if not entry.is_dir() or entry.is_symlink() or (uid is not None and info.st_uid != uid):
            continue
        if not _alive(int(pid_text)):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def _staging() -> Path:
    """This process's private directory of content-named copies (0700, removed at exit;
    the pid in its name lets a later process remove it where this one could not)."""
    global _staging_root
    if _staging_root is None or not _staging_root.is_dir():
        sweep_dead_staging()
        root = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-"))
        owner = os.getpid()

        def remove() -> None:
            if os.getpid() == owner:  # a forked child exiting leaves its parent's copies
                shutil.rmtree(root, ignore_errors=True)

        atexit.register(remove)
        _staging_root = root
    return _staging_root


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def load_directory(
    manifest: Manifest, manifest_bytes: bytes, contents: Mapping[str, bytes]
) -> Path:
    """A private directory holding exactly the verified ``contents`` (and manifest); the
    adapter loads the code from there.

    Args:
        manifest: the verified manifest.
        manifest_bytes: ``manifest.json`` as read and verified.
        contents: every listed file's verified bytes by relative path.

    Raises:
        OSError: the private directory cannot be written.
    """
    digest = hashlib.sha256(
        repr(sorted((f.path, f.sha256) for f in manifest.files)).encode()
        + hashlib.sha256(manifest_bytes).digest()
    ).hexdigest()
    with _lock:
        target = _staging() / digest
        if target.is_dir():
            return target
        partial = Path(tempfile.mkdtemp(dir=_staging(), prefix=".copy-"))
        try:
            for entry in manifest.files:
                destination = partial / entry.path
                destination.parent.mkdir(parents=True, exist_ok=True)
                _write_private(destination, contents[entry.path])
            _write_private(partial / MANIFEST_NAME, manifest_bytes)
            os.rename(partial, target)
        finally:
            if partial.exists():
                shutil.rmtree(partial, ignore_errors=True)
        return target
