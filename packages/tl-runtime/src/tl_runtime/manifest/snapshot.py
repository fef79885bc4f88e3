"""Reading an artifact once: every byte that is verified is the byte that is used.

`read_artifact` opens the artifact directory once and reads ``manifest.json`` and every
listed file through that one descriptor, each file opened without following links and
refused unless it is a regular file (a FIFO would block the reader forever; a device
would be read without end), then checks the manifest's own digest and every file's
sha256 against the bytes in memory. A caller that loads code writes those verified bytes
to a private copy and loads that (`tl_runtime.load`), so swapping the directory (a
blue/green deploy by rename) or a file in it between the check and the load cannot make
the process run code other than what it verified.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tl_runtime.errors import ArtifactError, HashMismatchError, InsecureArtifactError
from tl_runtime.manifest.document import Manifest
from tl_runtime.manifest.fields import MANIFEST_NAME
from tl_runtime.native_build import first_shared_writable

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class ArtifactSnapshot:
    """An artifact as read once and verified.

    Attributes:
        directory: the artifact directory it was read from.
        manifest: the validated manifest.
        manifest_bytes: ``manifest.json`` as read.
        contents: every listed file's bytes by relative path, each matching its sha256.
    """

    directory: Path
    manifest: Manifest
    manifest_bytes: bytes
    contents: Mapping[str, bytes]


def file_kind(mode: int) -> str:
    """What a file that is not a regular file is, from its ``st_mode``, for messages."""
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


MAX_MANIFEST_BYTES = 16 << 20
"""The largest ``manifest.json`` read (a real one is a few KiB): a larger file is refused
before it is read, never read whole into memory."""

MAX_FILE_BYTES = 1 << 30
"""The largest file an artifact may list (a kernel's library or source; a real one is
KiBs to MiBs): a larger one (a sparse file of terabytes) is refused before it is read."""


def read_regular(
    root_fd: int, relative: str, *, shown: str | None = None, limit: int = MAX_FILE_BYTES
) -> bytes:
    """The bytes of ``relative`` under the directory ``root_fd``, never following a link.

    Every directory on the way is opened with ``O_NOFOLLOW``; the file itself is checked
    with ``lstat`` before it is opened (no open of a FIFO or device) and with ``fstat``
    after (the same regular file), and its size against ``limit`` before it is read.

    Raises:
        ArtifactError: it is missing, is (or is reached through) a symlink, is not a
            regular file (naming what it is), or holds more than ``limit`` bytes.
    """
    name = shown or relative
    parts = Path(relative).parts
    current = root_fd
    opened: list[int] = []
    try:
        for part in parts[:-1]:
            try:
                current = os.open(
                    part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=current
                )
            except FileNotFoundError:
                raise ArtifactError(
                    f"artifact file {name!r} listed in the manifest is missing"
                ) from None
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise ArtifactError(
                        f"artifact file {name!r}: {part} is a symlink or not a directory; an "
                        "artifact holds its files itself (symlinks could load code from "
                        "outside it)"
                    ) from None
                raise ArtifactError(f"artifact file {name!r} cannot be opened: {exc}") from None
            opened.append(current)
            _refuse_writable_by_all(name, os.fstat(current), f"directory {part!r} of")
        leaf = parts[-1]
        try:
            before = os.stat(leaf, dir_fd=current, follow_symlinks=False)
        except FileNotFoundError:
            raise ArtifactError(
                f"artifact file {name!r} listed in the manifest is missing"
            ) from None
        if stat.S_ISLNK(before.st_mode):
            raise ArtifactError(
                f"artifact file {name!r} is a symlink; an artifact holds its files itself "
                "(symlinks could load code from outside it)"
            )
        if not stat.S_ISREG(before.st_mode):
            raise ArtifactError(
                f"artifact file {name!r}: expected a regular file, got {file_kind(before.st_mode)}"
            )
        try:
            fd = os.open(leaf, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=current)
        except OSError as exc:
            raise ArtifactError(f"artifact file {name!r} cannot be opened: {exc}") from None
        try:
            after = os.fstat(fd)
            if not stat.S_ISREG(after.st_mode):
                raise ArtifactError(
                    f"artifact file {name!r}: expected a regular file, got {file_kind(after.st_mode)}"
                )
            _refuse_writable_by_all(name, after, "file")
            if after.st_size > limit:
                raise _too_large(name, after.st_size, limit)
            chunks = []
            read = 0
            while chunk := os.read(fd, 1 << 20):
                read += len(chunk)
                if read > limit:  # grew after the check
                    raise _too_large(name, read, limit)
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)
    finally:
        for fd in opened:
            os.close(fd)


def _too_large(name: str, size: int, limit: int) -> ArtifactError:
    return ArtifactError(
        f"artifact file {name!r} holds {size} bytes or more, beyond the {limit} an artifact "
        "file may hold; it is not a kernel's file (a damaged or sparse file): re-export the "
        "artifact"
    )


def _refuse_writable_by_all(name: str, info: os.stat_result, what: str) -> None:
    """Refuse a file (or a directory on its way) of an artifact that every user can
    write: anyone could rewrite it and the manifest's hashes together."""
    if hasattr(os, "getuid") and info.st_mode & stat.S_IWOTH:
        raise InsecureArtifactError(
            f"artifact {what} {name!r} is writable by every user (mode "
            f"{stat.S_IMODE(info.st_mode):04o}), so anyone could replace the code with "
            "matching hashes; run chmod o-w on it (an artifact should be writable only "
            "by who deploys it)"
        )


def check_not_world_writable(directory: Path, info: os.stat_result) -> None:
    """Refuse an artifact directory that every user can write, or one inside a directory
    every user can write without the sticky bit (``/tmp`` is fine): anyone could replace
    its code. The same rule as the caches' roots (docs/deploy.md, "Trust model").

    Raises:
        InsecureArtifactError: naming the directory, its mode and the remedy.
    """
    if not hasattr(os, "getuid"):  # Windows: no POSIX modes to check
        return
    remedy = "run chmod o-w on it (an artifact should be writable only by who deploys it)"
    if info.st_mode & stat.S_IWOTH:
        raise InsecureArtifactError(
            f"artifact directory {directory} is writable by every user (mode "
            f"{stat.S_IMODE(info.st_mode):04o}), so anyone could replace its code; {remedy}"
        )
    shared = first_shared_writable(Path(os.path.realpath(directory)).parents)
    if shared is not None:
        parent, st = shared
        raise InsecureArtifactError(
            f"artifact directory {directory} is inside {parent}, which every user can "
            f"write without the sticky bit (mode {stat.S_IMODE(st.st_mode):04o}), so "
            f"anyone could replace the artifact; {remedy.replace('on it', 'on ' + str(parent))}"
        )


def artifact_directory(function: str, directory: object) -> Path:
    """``directory`` as a Path, if it is a str or a path-like object naming a text path.

    Args:
        function: the public function checking its argument (named in the message).
        directory: its ``directory`` argument.

    Raises:
        TypeError: anything else (an int, bytes, None, ...); the message names
            ``function``, the parameter, the expectation and what came.
    """
    expected = "expected the artifact directory as a str or path-like object"
    if not isinstance(directory, str | os.PathLike) or isinstance(directory, bytes):
        raise TypeError(
            f"{function}: directory: {expected}, got {type(directory).__name__} {directory!r:.80}"
        )
    try:
        return Path(directory)
    except TypeError as err:  # a path-like object whose __fspath__ gives bytes (or not a path)
        raise TypeError(
            f"{function}: directory: {expected} naming a text path, got "
            f"{type(directory).__name__} {directory!r:.80} ({err})"
        ) from None


def read_artifact(directory: str | os.PathLike[str], *, verify: bool = True) -> ArtifactSnapshot:
    """Read ``directory``'s manifest and files once, through one directory descriptor.

    Args:
        directory: the artifact directory (it may itself be reached through a link).
        verify: check the manifest's digest and every file's sha256 (and refuse a
            world-writable directory); False reads the manifest alone (``contents`` empty).

    Raises:
        ArtifactError: not a directory, no manifest, a special file or symlink inside, a
            missing file, a malformed manifest.
        InsecureArtifactError: (``verify``) the directory can be written by every user.
        SchemaVersionError: the manifest's schema version is not this runtime's.
        HashMismatchError: (``verify``) the manifest or a file differs from its digest.
        TypeError: ``directory`` is not a str or path-like object (names the parameter).
    """
    from tl_runtime.manifest.storage import check_manifest_digest, parse_manifest

    root = artifact_directory("read_artifact", directory)
    try:
        root_fd = os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    except FileNotFoundError:
        raise ArtifactError(f"artifact path {str(root)!r} does not exist") from None
    except NotADirectoryError:
        raise ArtifactError(f"artifact path {str(root)!r} is not a directory") from None
    except OSError as exc:
        raise ArtifactError(f"artifact path {str(root)!r} cannot be opened: {exc}") from None
    try:
        if verify:
            check_not_world_writable(root, os.fstat(root_fd))
        try:
            manifest_bytes = read_regular(root_fd, MANIFEST_NAME, limit=MAX_MANIFEST_BYTES)
        except ArtifactError as exc:
            if "is missing" in str(exc):
                raise ArtifactError(
                    f"{root} is not an artifact: {MANIFEST_NAME} not found"
                ) from None
            raise
        data, manifest = parse_manifest(manifest_bytes, root / MANIFEST_NAME)
        contents: dict[str, bytes] = {}
        if verify:
            check_manifest_digest(data, root / MANIFEST_NAME)
            for entry in manifest.files:
                content = read_regular(root_fd, entry.path)
                actual = hashlib.sha256(content).hexdigest()
                if actual != entry.sha256:
                    raise HashMismatchError(
                        f"artifact file {entry.path!r} has sha256 {actual}, the manifest "
                        f"records {entry.sha256}: the file was modified or truncated after export"
                    )
                contents[entry.path] = content
        return ArtifactSnapshot(root, manifest, manifest_bytes, contents)
    finally:
        os.close(root_fd)
