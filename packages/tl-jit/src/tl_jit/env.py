"""Environment defaults: ``TL_TARGET``, ``TL_EXECUTION_BACKEND``, ``TL_CACHE_DIR``,
``TL_DISABLE_CACHE``, ``TL_TRACEBACK``.

``TL_DUMP_IR`` is honoured by the backend's pass pipeline itself (`tl_passes.Pipeline`).
Read at every use, so a test (or a user) may change them at run time.
"""

from __future__ import annotations

import os
from pathlib import Path

TARGET_ENV = "TL_TARGET"
EXECUTION_BACKEND_ENV = "TL_EXECUTION_BACKEND"
CACHE_DIR_ENV = "TL_CACHE_DIR"
DISABLE_CACHE_ENV = "TL_DISABLE_CACHE"
DUMP_IR_ENV = "TL_DUMP_IR"
TRACEBACK_ENV = "TL_TRACEBACK"

_FALSE_WORDS = frozenset({"", "0", "false", "no", "off"})


def default_target(target: object) -> object:
    """``target`` unless it is ``None`` or ``"auto"``: then ``TL_TARGET`` if set, else ``"auto"``."""
    if target is None or target == "auto":
        return os.environ.get(TARGET_ENV) or "auto"
    return target


def default_execution_backend(execution_backend: str | None) -> str:
    """``execution_backend`` unless ``None``/``"auto"``: then ``TL_EXECUTION_BACKEND`` or ``"auto"``."""
    if execution_backend is None or execution_backend == "auto":
        return os.environ.get(EXECUTION_BACKEND_ENV) or "auto"
    return execution_backend


def cache_disabled() -> bool:
    """True when ``TL_DISABLE_CACHE`` is set to anything but 0/false/no/off/empty."""
    return os.environ.get(DISABLE_CACHE_ENV, "").strip().lower() not in _FALSE_WORDS


def traceback_requested() -> bool:
    """True when ``TL_TRACEBACK`` asks for full tracebacks (``tl`` and kernel errors keep
    the compiler's frames); anything but 0/false/no/off/empty."""
    return os.environ.get(TRACEBACK_ENV, "").strip().lower() not in _FALSE_WORDS


def cache_root() -> Path:
    """The cache root: ``TL_CACHE_DIR`` if set, else the per-user cache dir (platformdirs).

    Raises:
        ValueError: ``TL_CACHE_DIR`` starts with ``~user`` for a user that does not exist.
    """
    configured = os.environ.get(CACHE_DIR_ENV)
    if configured:
        try:
            return Path(configured).expanduser()
        except RuntimeError as err:  # ~nosuchuser
            raise ValueError(f"{CACHE_DIR_ENV}={configured!r}: {err}") from None
    import platformdirs

    return Path(platformdirs.user_cache_dir("tl-jit", appauthor=False))
