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

#: Every scope a tile may live in.
SCOPES: tuple[str, ...] = (GLOBAL, SHARED, SHARED_DYN, FRAGMENT, LOCAL, LOCAL_VAR)


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
    return buffer_scope(buffer) in (SHARED, SHARED_DYN)


def is_fragment(buffer: Any) -> bool:
    """Whether the buffer is a per-thread-distributed fragment (``local.fragment``)."""
    return buffer_scope(buffer) == FRAGMENT


def is_local(buffer: Any) -> bool:
    """Whether the buffer is thread-private (``local`` or ``local.var``)."""
    return buffer_scope(buffer) in (LOCAL, LOCAL_VAR)
