"""Proofs on the cache's JSON records: an HMAC-SHA256 under a secret kept in the cache
root (``memo.key``: 32 random bytes, a private regular file of this user, written 0600
on first use). Only this cache's own writer holds the secret, so a record it did not
write (edited, copied from another cache root, written by an older tl_jit) proves
nothing. Front-end records (`tl_jit.memo`) and tuning results (`tl_jit.tune_records`)
are signed this way (docs/cache.md, "Trust model")."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import stat
import tempfile
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tl_jit.cache import KernelCache

__all__ = ["SECRET_NAME", "proof", "proves", "secret"]

SECRET_NAME = "memo.key"
"""The secret's file name in the cache root."""

_SECRET_BYTES = 32
_secrets: dict[str, bytes] = {}


def _read_secret(path: str) -> bytes:
    # Without blocking: a FIFO in the secret's place is refused below, not waited on.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path} is not a regular file")
        if hasattr(os, "getuid") and info.st_uid != os.getuid():
            raise OSError(f"{path} is owned by uid {info.st_uid}, not this user")
        if info.st_mode & 0o077:
            raise OSError(f"{path} has mode {stat.S_IMODE(info.st_mode):o}; expected 600")
        data = os.read(fd, _SECRET_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) != _SECRET_BYTES:
        raise OSError(f"{path} holds {len(data)} bytes; expected {_SECRET_BYTES}")
    return data


def secret(cache: KernelCache) -> bytes | None:
    """The root's secret, created on first use; None (with a `CacheWarning`: signed
    records are then neither trusted nor written) when it is unusable."""
    from tl_jit.cache import CacheWarning

    path = str(cache.root / SECRET_NAME)
    known = _secrets.get(path)
    if known is not None:
        return known
    try:
        cache.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not os.path.exists(path):
            _publish_secret(path)
        found = _read_secret(path)
    except OSError as exc:
        warnings.warn(
            f"tl_jit cache: the front-end memo and saved tuning results are off: their "
            f"secret {path} is unusable ({exc}); remove the file to let tl_jit write a new one",
            CacheWarning,
            3,
        )
        return None
    _secrets[path] = found
    return found


def _publish_secret(path: str) -> None:
    """Create ``path`` holding a new secret, whole or not at all: written to a private
    temporary file first and linked into place (another process or thread reading it
    meanwhile saw an empty file, and one killed between the create and the write left it
    empty for good). Where another won the race, its secret stands."""
    directory = os.path.dirname(path)
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=".memo-key-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(os.urandom(_SECRET_BYTES))
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temporary, path)  # atomic, and never replaces a secret already there
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links: create it in place
            with contextlib.suppress(FileExistsError):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as handle:
                    handle.write(os.urandom(_SECRET_BYTES))
    finally:
        os.unlink(temporary)


def proof(key: bytes, parts: Sequence[Any]) -> str:
    """The HMAC-SHA256 (hex) under ``key`` of ``parts`` as compact JSON.

    Raises:
        TypeError, ValueError: ``parts`` is not JSON data.
    """
    message = json.dumps(list(parts), separators=(",", ":"), sort_keys=True)
    return hmac.new(key, message.encode("utf-8"), hashlib.sha256).hexdigest()


def proves(key: bytes, parts: Sequence[Any], claimed: object) -> bool:
    """Whether ``claimed`` is the proof of ``parts`` under ``key`` (compared in constant
    time; a proof that is not a string, or parts that are not JSON data, prove nothing)."""
    if not isinstance(claimed, str):
        return False
    try:
        expected = proof(key, parts)
    except (TypeError, ValueError):
        return False
    return hmac.compare_digest(claimed, expected)
