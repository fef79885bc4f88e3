"""Which environment variables a kernel builder reads while it runs.

A builder (a ``@jit`` function, or an eager function's body) may read
``os.environ``; what it builds can then depend on a variable no key covers. The
memo layers (in memory, the eager dispatcher and the front-end records on disk)
therefore record the variables the builder read, with their values, and reuse
the kernel only while every one of them still has that value (docs/cache.md).

Recorded: reads through ``os.environ[...]``, ``os.environ.get``, ``os.getenv``
and ``name in os.environ``, and the same through the bytes view ``os.environb``
(``os.getenvb``), by the user's code (not by the compiler packages, tvm
or an installed library: what those read is theirs, covered by the versions in
every key) on the thread that runs the builder, while it runs. Not seen:
iterating or copying the whole environment, and C code calling ``getenv``
itself; a builder doing that should take the value as an argument.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tl_jit.value_kinds import is_compiler_module_name, is_library_module

__all__ = ["EnvReads", "as_record", "freeze", "from_record", "recording", "unchanged"]

#: The variables a builder read, sorted by name: ``(name, value)``, value None when unset.
EnvReads = tuple[tuple[str, str | None], ...]

#: ``os._Environ``: the class whose item lookup a recording wraps.
_ENVIRON_TYPE: Any = type(os.environ)
_state = threading.local()
_install_lock = threading.Lock()
_active = 0
_original_getitem: Callable[[Any, str], str] | None = None


#: Modules between a read and its reader (``os.getenv`` -> ``Mapping.get`` -> here).
#: ``Mapping.get`` and ``__contains__`` run with the module name ``collections.abc``
#: (``_collections_abc`` renames itself) on the Pythons this supports.
_PLUMBING = frozenset({"os", "_collections_abc", "collections.abc", __name__})


def _read_by_user_code() -> bool:
    """Whether the variable being read is read by the user's code, not by the compiler
    packages, tvm or an installed library (an import inside the builder reads variables
    of its own: those are covered by the versions in every key, or documented)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__") in _PLUMBING:
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return False
    name = str(frame.f_globals.get("__name__", ""))
    module = sys.modules.get(name)
    return not (is_compiler_module_name(name) or (module is not None and is_library_module(module)))


def _is_the_environment(mapping: Any) -> bool:
    """Whether ``mapping`` is ``os.environ`` or its bytes view ``os.environb``."""
    return mapping is os.environ or mapping is getattr(os, "environb", None)


def _as_text(value: Any) -> str:
    """A name or value as ``os.environ`` holds it (``os.environb`` gives bytes)."""
    return os.fsdecode(value) if isinstance(value, bytes) else str(value)


def _recording_getitem(self: Any, key: Any) -> Any:
    original = _original_getitem
    assert original is not None
    stack: list[dict[str, str | None]] | None = getattr(_state, "stack", None)
    try:
        value = original(self, key)
    except KeyError:
        if stack and _is_the_environment(self) and _read_by_user_code():
            for reads in stack:
                reads.setdefault(_as_text(key), None)
        raise
    if stack and _is_the_environment(self) and _read_by_user_code():
        for reads in stack:
            reads.setdefault(_as_text(key), _as_text(value))
    return value


@contextmanager
def recording() -> Iterator[dict[str, str | None]]:
    """Record, into the yielded dict, the variables this thread reads from ``os.environ``
    while the block runs (the first value seen for each; None: it was unset).

    ``os._Environ.__getitem__`` is wrapped while any recording is active in the process
    and restored when the last one ends; blocks nest and may run on several threads.
    """
    global _active, _original_getitem
    with _install_lock:
        if _active == 0:
            _original_getitem = _ENVIRON_TYPE.__getitem__
            _ENVIRON_TYPE.__getitem__ = _recording_getitem
        _active += 1
    reads: dict[str, str | None] = {}
    stack = getattr(_state, "stack", None)
    if stack is None:
        stack = _state.stack = []
    stack.append(reads)
    try:
        yield reads
    finally:
        stack.pop()
        with _install_lock:
            _active -= 1
            if _active == 0:
                _ENVIRON_TYPE.__getitem__ = _original_getitem
                _original_getitem = None


def freeze(reads: dict[str, str | None]) -> EnvReads:
    """The recorded reads as a sorted tuple (what the memo layers store)."""
    return tuple(sorted(reads.items()))


def unchanged(reads: EnvReads) -> bool:
    """Whether every recorded variable still has its recorded value (or is still unset)."""
    environ = os.environ
    return all(environ.get(name) == value for name, value in reads)


def as_record(reads: EnvReads) -> list[list[str | None]]:
    """The reads as JSON for a front-end record."""
    return [[name, value] for name, value in reads]


def from_record(data: object) -> EnvReads | None:
    """The reads stored in a front-end record; None when malformed."""
    if not isinstance(data, list):
        return None
    reads: list[tuple[str, str | None]] = []
    for item in data:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
            return None
        if item[1] is not None and not isinstance(item[1], str):
            return None
        reads.append((item[0], item[1]))
    return tuple(sorted(reads))
