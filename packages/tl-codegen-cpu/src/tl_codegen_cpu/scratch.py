"""Scratch directories for builds that are removed even when a build process is killed.

A build works in ``<tmp>/tl-cpu-build-*`` and deletes it when done. A process
killed with ``kill -9`` cannot clean up, so each scratch directory holds a lock
file its owner keeps locked for the whole build (the operating system drops the
lock when the owner dies); every new build first sweeps the directories whose
lock nobody holds any more.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

#: The name prefix of CPU build scratch directories.
SCRATCH_PREFIX = "tl-cpu-build-"

#: The lock file inside each scratch directory, held by its owner.
LOCK_NAME = ".owner.lock"

#: A directory younger than this is never swept: its owner may not hold its lock yet.
MIN_AGE_SECONDS = 60.0


def sweep_stale_scratch_directories(
    parent: str | os.PathLike[str] | None = None, *, min_age_seconds: float = MIN_AGE_SECONDS
) -> list[Path]:
    """Remove the scratch directories under ``parent`` whose owner is gone.

    A directory is stale when it is older than ``min_age_seconds`` and its lock
    can be taken (no live process holds it). Directories that disappear or
    cannot be removed meanwhile are skipped silently: another sweeper got there.

    Args:
        parent: where to look (default: the system temporary directory).
        min_age_seconds: the minimum age (by modification time) of a swept directory.

    Returns:
        The directories removed.
    """
    root = Path(parent) if parent is not None else Path(tempfile.gettempdir())
    removed: list[Path] = []
    now = time.time()
    for candidate in root.glob(f"{SCRATCH_PREFIX}*"):
        try:
            if not candidate.is_dir() or now - candidate.stat().st_mtime < min_age_seconds:
                continue
            lock = FileLock(str(candidate / LOCK_NAME), timeout=0)
            with lock:
                shutil.rmtree(candidate)
        except (Timeout, OSError):
            continue
        removed.append(candidate)
    return removed


@contextmanager
def scratch_directory() -> Iterator[Path]:
    """Yield a fresh scratch directory, locked by this process, and remove it afterwards.

    Sweeps stale scratch directories (`sweep_stale_scratch_directories`) first.
    """
    sweep_stale_scratch_directories()
    path = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX))
    try:
        with FileLock(str(path / LOCK_NAME)):
            yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
