"""The cache's file operations: private directories and entries, reading a record only
when it is a regular file of a record's size, and whether a process is alive (a staging
directory's owner)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = [
    "MAX_RECORD_BYTES",
    "make_private_dir",
    "make_private_tree",
    "pid_alive",
    "read_regular_file",
]


def make_private_dir(path: Path) -> None:
    """Create ``path`` (and parents) with mode 0700 for the directories created here."""
    from tl_runtime.native_build import make_private_dirs

    make_private_dirs(path)


def make_private_tree(path: Path) -> None:
    """Make a freshly built entry private: directories 0700, files 0600 (links untouched)."""
    for directory, dirnames, filenames in os.walk(path):
        os.chmod(directory, 0o700)
        for name in filenames:
            file = os.path.join(directory, name)
            if not os.path.islink(file):
                os.chmod(file, 0o600)
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(directory, d))]


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (someone else's counts; a pid past pid_t none)."""
    if not 0 < pid < 2**31:  # beyond pid_t (os.kill: OverflowError): no such process
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


MAX_RECORD_BYTES = 16 << 20
"""The largest record `read_regular_file` reads (a real one is KiBs; a tuning record of
thousands of configurations well under a MiB): a larger file is damage, never read whole."""


def read_regular_file(path: Path | str, limit: int = MAX_RECORD_BYTES) -> bytes:
    """The bytes of the regular file at ``path`` (not through a symlink).

    Opened without blocking and checked after opening, so a FIFO or device put where a
    cache file belongs is refused instead of waited on forever; one of more than
    ``limit`` bytes (a sparse file of gigabytes) is refused before it is read.

    Raises:
        OSError: ``path`` is missing, a symlink, not a regular file, or too large.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path} is not a regular file")
        if info.st_size > limit:
            raise OSError(f"{path} holds {info.st_size} bytes, beyond the {limit} of a record")
        chunks = []
        read = 0
        while chunk := os.read(fd, 1 << 20):
            read += len(chunk)
            if read > limit:
                raise OSError(f"{path} grew past the {limit} bytes of a record")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
