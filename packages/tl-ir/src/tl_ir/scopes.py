"""Buffer scopes of the kernel language and helpers to ask a buffer's scope."""

from __future__ import annotations

from typing import Any

__all__ = [
    "FRAGMENT",
    "GLOBAL",
    "LOCAL",
    "LOCAL_VAR",
    "SCOPES",
    "SHARED",
    "SHARED_DYN",
    "SHARED_SCOPES",
    "THREAD_PRIVATE_SCOPES",
    "WARP",
    "buffer_scope",
    "is_fragment",
    "is_global",
    "is_local",
    "is_shared",
]

GLOBAL = "global"
SHARED = "shared"
SHARED_DYN = "shared.dyn"
FRAGMENT = "local.fragment"
LOCAL = "local"
LOCAL_VAR = "local.var"
#: Not a buffer scope: the scope a warp-wide barrier (``tvm_storage_sync``) orders,
#: beside `SHARED` for a block-wide one.
WARP = "warp"

#: Every scope a tile may live in.
SCOPES: tuple[str, ...] = (GLOBAL, SHARED, SHARED_DYN, FRAGMENT, LOCAL, LOCAL_VAR)
#: The block-shared scopes (static and dynamic shared memory).
SHARED_SCOPES: tuple[str, ...] = (SHARED, SHARED_DYN)
#: The thread-private scopes (registers and scalars); `FRAGMENT` is not among them:
#: a fragment is distributed over the block's threads.
THREAD_PRIVATE_SCOPES: tuple[str, ...] = (LOCAL, LOCAL_VAR)


def buffer_scope(buffer: Any) -> str:
    """The storage scope of a buffer (a TVM buffer Var); ``"global"`` when unset.

    Raises:
        TypeError: ``buffer`` is not a buffer.
    """
    ty = getattr(buffer, "ty", None)
    if ty is None or not hasattr(ty, "storage_scope"):
        raise TypeError(f"expected a buffer, got {type(buffer).__name__}: {buffer!r}")
    scope = str(ty.storage_scope)
    return scope or GLOBAL


def is_global(buffer: Any) -> bool:
    """Whether the buffer lives in global (device) memory."""
    return buffer_scope(buffer) == GLOBAL


def is_shared(buffer: Any) -> bool:
    """Whether the buffer is block-shared (``shared`` or ``shared.dyn``)."""
    return buffer_scope(buffer) in SHARED_SCOPES


def is_fragment(buffer: Any) -> bool:
    """Whether the buffer is a per-thread-distributed fragment (``local.fragment``)."""
    return buffer_scope(buffer) == FRAGMENT


def is_local(buffer: Any) -> bool:
    """Whether the buffer is thread-private (``local`` or ``local.var``)."""
    return buffer_scope(buffer) in THREAD_PRIVATE_SCOPES
