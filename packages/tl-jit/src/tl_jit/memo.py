"""The front-end memo: ``frontend/<front-end key>.json`` names the cache entry a call built.

A record holds the ir key of the entry, the environment variables the builder read
(`tl_jit.env_reads`) and a proof: an HMAC-SHA256, under a secret kept in the cache
root (``memo.key``, 32 random bytes, 0600), over the front-end key, the ir key and
those variables. Only this cache's own writer, right after building the entry from
the call whose front-end key it is, holds the secret; so a record whose ir key was
changed to name another valid entry, a record copied from another cache root, or one
written by an older tl_jit proves nothing and is ignored (with a `CacheWarning`),
and the call builds its own kernel (docs/cache.md, "Trust model").
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
import warnings
from typing import TYPE_CHECKING, Any

from tl_jit.env_reads import EnvReads, as_record, from_record, unchanged

if TYPE_CHECKING:
    from tl_jit.cache import KernelCache
    from tl_jit.kernel import JITKernel

__all__ = ["load", "store"]

SECRET_NAME = "memo.key"
_SECRET_BYTES = 32
_secrets: dict[str, bytes] = {}


def _read_secret(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
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


def _secret(cache: KernelCache) -> bytes | None:
    """The root's memo secret, created on first use; None (with a warning) if unusable."""
    from tl_jit.cache import CacheWarning

    path = str(cache.root / SECRET_NAME)
    known = _secrets.get(path)
    if known is not None:
        return known
    try:
        cache.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            secret = _read_secret(path)
        else:
            with os.fdopen(fd, "wb") as handle:
                handle.write(os.urandom(_SECRET_BYTES))
            secret = _read_secret(path)
    except OSError as exc:
        warnings.warn(
            f"tl_jit cache: the front-end memo is off: its secret {path} is unusable "
            f"({exc}); remove the file to let tl_jit write a new one",
            CacheWarning,
            3,
        )
        return None
    _secrets[path] = secret
    return secret


def _proof(secret: bytes, front_key: str, ir_key: str, environment: EnvReads) -> str:
    message = json.dumps([front_key, ir_key, as_record(environment)], separators=(",", ":"))
    return hmac.new(secret, message.encode("utf-8"), hashlib.sha256).hexdigest()


def load(front_key: str) -> tuple[JITKernel, EnvReads] | None:
    """The kernel the memo names for ``front_key`` and the variables its builder read;
    None when there is no record, its proof fails, a variable the builder read has
    another value now, or the entry is absent or damaged."""
    from tl_jit.cache import CacheWarning, default_cache
    from tl_jit.kernel import JITKernel

    cache = default_cache()
    record = cache.read_record("frontend", front_key)
    if record is None:
        return None
    secret = _secret(cache)
    if secret is None:
        return None
    ir_key: str = record["ir_key"]
    environment = from_record(record.get("environment"))
    proof = record.get("proof")
    if (
        environment is None
        or not isinstance(proof, str)
        or not hmac.compare_digest(proof, _proof(secret, front_key, ir_key, environment))
    ):
        warnings.warn(
            f"tl_jit cache: ignoring front-end record {front_key[:16]}...: it does not prove "
            "it was written by this cache for this call (edited, copied from another cache, "
            "or written by an older tl_jit); the kernel is built again",
            CacheWarning,
            3,
        )
        return None
    if not unchanged(environment):
        return None
    runtime_kernel = cache.load(ir_key)
    if runtime_kernel is None:
        return None
    return JITKernel(runtime_kernel, cache_key=ir_key), environment


def store(front_key: str, kernel: JITKernel, function: str, environment: EnvReads) -> None:
    """Record that the call with ``front_key`` built ``kernel`` (a cache entry) while its
    builder read ``environment``; failures only warn (the memo is an optimization)."""
    from tl_jit.cache import default_cache

    if kernel.cache_key is None:
        return
    cache = default_cache()
    secret = _secret(cache)
    if secret is None:
        return
    record: dict[str, Any] = {
        "ir_key": kernel.cache_key,
        "function": function,
        "environment": as_record(environment),
        "proof": _proof(secret, front_key, kernel.cache_key, environment),
    }
    cache.write_record("frontend", front_key, record)
