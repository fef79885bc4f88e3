"""Errors raised by tl_jit itself (compiler and runtime errors keep their own classes)."""

from __future__ import annotations


class JITError(Exception):
    """Base class of the errors tl_jit raises for bad use of its API."""


class CacheError(JITError):
    """The disk cache cannot be used (unwritable root, lock timeout...)."""


class AutotuneError(JITError):
    """No configuration of an autotuned kernel compiled, ran and passed its check."""
