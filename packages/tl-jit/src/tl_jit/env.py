"""Environment defaults: ``TL_TARGET``, ``TL_EXECUTION_BACKEND``, ``TL_CACHE_DIR``,
``TL_DISABLE_CACHE``, ``TL_TRACEBACK``.

``TL_DUMP_IR`` is honoured by the backend's pass pipeline itself (`tl_passes.Pipeline`).
Read at every use, so a test (or a user) may change them at run time. TileLang's cache
switches (`disable_cache`, `enable_cache`, `is_cache_enabled`) set, restore and read
``TL_DISABLE_CACHE``.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

TARGET_ENV = "TL_TARGET"
EXECUTION_BACKEND_ENV = "TL_EXECUTION_BACKEND"
CACHE_DIR_ENV = "TL_CACHE_DIR"
DISABLE_CACHE_ENV = "TL_DISABLE_CACHE"
TILELANG_DISABLE_CACHE_ENV = "TILELANG_DISABLE_CACHE"
"""TileLang's name of the same switch, honoured so that a ported program that sets it
(TileLang's autotune examples do) runs without the cache as it did there."""
DUMP_IR_ENV = "TL_DUMP_IR"
TRACEBACK_ENV = "TL_TRACEBACK"

_FALSE_WORDS = frozenset({"", "0", "false", "no", "off"})

_switch_lock = threading.Lock()
_NOT_SET = object()
#: What ``TL_DISABLE_CACHE`` held before `disable_cache` set it (`_NOT_SET`: unset), or
#: None while `disable_cache` is not in force.
_replaced_value: object = None


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
    """True when ``TL_DISABLE_CACHE`` (or TileLang's ``TILELANG_DISABLE_CACHE``) is set
    to anything but 0/false/no/off/empty."""
    return any(
        os.environ.get(name, "").strip().lower() not in _FALSE_WORDS
        for name in (DISABLE_CACHE_ENV, TILELANG_DISABLE_CACHE_ENV)
    )


def disable_cache() -> None:
    """Turn the kernel disk cache off for this process (TileLang's
    ``tilelang.disable_cache``): every later compile builds afresh into a scratch
    directory, the front-end memo and saved autotune results are neither read nor
    written. A jit function's in-memory kernels are kept, as in TileLang.

    It sets ``TL_DISABLE_CACHE=1`` in ``os.environ``, so worker processes started
    afterwards (autotune builds) honour it too. Calling it again changes nothing.
    """
    global _replaced_value
    with _switch_lock:
        if _replaced_value is None:
            _replaced_value = os.environ.get(DISABLE_CACHE_ENV, _NOT_SET)
        os.environ[DISABLE_CACHE_ENV] = "1"


def enable_cache() -> None:
    """Undo `disable_cache` (TileLang's ``tilelang.enable_cache``): ``TL_DISABLE_CACHE``
    gets back the value it had before, so a ``TL_DISABLE_CACHE`` the environment set
    keeps the cache off (as TileLang's ``TILELANG_DISABLE_CACHE`` does). Without an
    earlier `disable_cache` it changes nothing."""
    global _replaced_value
    with _switch_lock:
        previous, _replaced_value = _replaced_value, None
        if previous is None:
            return
        if isinstance(previous, str):
            os.environ[DISABLE_CACHE_ENV] = previous
        else:
            os.environ.pop(DISABLE_CACHE_ENV, None)


def is_cache_enabled() -> bool:
    """Whether compiles use the disk cache: neither `disable_cache` nor
    ``TL_DISABLE_CACHE`` turned it off (TileLang's ``tilelang.is_cache_enabled``)."""
    return not cache_disabled()


def traceback_requested() -> bool:
    """True when ``TL_TRACEBACK`` asks for full tracebacks (``tl`` and kernel errors keep
    the compiler's frames); anything but 0/false/no/off/empty."""
    return os.environ.get(TRACEBACK_ENV, "").strip().lower() not in _FALSE_WORDS


def cache_root() -> Path:
    """The cache root: ``TL_CACHE_DIR`` if set, else the per-user cache dir (platformdirs).

    An empty ``TL_CACHE_DIR`` counts as unset, as an empty ``XDG_CACHE_HOME`` does for
    platformdirs (and an empty ``TL_TARGET`` here): the per-user directory.

    Raises:
        ValueError: ``TL_CACHE_DIR`` is only blanks (a directory named by spaces in the
            working directory was surely not meant), or starts with ``~user`` for a user
            that does not exist.
    """
    configured = os.environ.get(CACHE_DIR_ENV)
    if configured and not configured.strip():
        raise ValueError(
            f"{CACHE_DIR_ENV}={configured!r}: expected a directory, got only blanks (unset "
            "it, or leave it empty, for the per-user cache directory)"
        )
    if configured:
        try:
            return Path(configured).expanduser()
        except RuntimeError as err:  # ~nosuchuser
            raise ValueError(f"{CACHE_DIR_ENV}={configured!r}: {err}") from None
    import platformdirs

    return Path(platformdirs.user_cache_dir("tl-jit", appauthor=False))
