"""The front-end memo: ``frontend/<front-end key>.json`` names the cache entry a call built.

A record holds the ir key of the entry, the environment variables the builder read
(`tl_jit.env_reads`) and a proof (`tl_jit.record_proof`): an HMAC-SHA256, under a
secret kept in the cache root (``memo.key``, 32 random bytes, 0600), over the front-end
key, the ir key and those variables. Only this cache's own writer, right after building
the entry from the call whose front-end key it is, holds the secret; so a record whose
ir key was changed to name another valid entry, a record copied from another cache
root, or one written by an older tl_jit proves nothing and is ignored (with a
`CacheWarning`), and the call builds its own kernel (docs/cache.md, "Trust model").
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from tl_jit import record_proof
from tl_jit.env_reads import EnvReads, as_record, from_record, unchanged

if TYPE_CHECKING:
    from tl_jit.kernel import JITKernel

__all__ = ["load", "store"]


def _parts(front_key: str, ir_key: str, environment: EnvReads) -> list[Any]:
    return [front_key, ir_key, as_record(environment)]


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
    secret = record_proof.secret(cache)
    if secret is None:
        return None
    ir_key: str = record["ir_key"]
    environment = from_record(record.get("environment"))
    if environment is None or not record_proof.proves(
        secret, _parts(front_key, ir_key, environment), record.get("proof")
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
    secret = record_proof.secret(cache)
    if secret is None:
        return
    record: dict[str, Any] = {
        "ir_key": kernel.cache_key,
        "function": function,
        "environment": as_record(environment),
        "proof": record_proof.proof(secret, _parts(front_key, kernel.cache_key, environment)),
    }
    cache.write_record("frontend", front_key, record)
