"""``fork()`` never leaves the child waiting on an import another thread had begun.

The first call of a kernel imports what it needs lazily (the eager front end, tvm, a
backend, an adapter). Python guards each module's import with a per-module lock; a
``fork()`` while another thread holds one copies the lock held, into a child where that
thread does not exist, and the child's first import of the module waits forever.
Before a fork, the forking thread therefore waits for the imports other threads have in
progress to finish (at most `WAIT_SECONDS`; an import blocked on one the forking thread
holds is not waited for, which would deadlock).

The same holds for the locks that guard one-time set-up (loading the launcher, the
context helper, an adapter): a `ForkSafeLock` is replaced by a fresh one in the child,
which then does the set-up again if the parent's thread had not finished it. Locks
below Python (tvm's and LLVM's, inside a compile) cannot be renewed: code that holds
them runs inside `fork_waits_for_this` (tl_jit's compile), and a fork waits for it too.

Where the wait runs matters. ``os.register_at_fork`` runs its ``before`` handlers newest
first, and modules imported after this one register handlers that take their own locks
there (``logging`` takes its module lock, ``concurrent.futures`` its shutdown lock,
``filelock`` its registry lock). A compile waited for from a handler that runs after
those would block on such a lock (a logger made while loading a backend), held by the
forking thread itself: the wait would run out its whole limit and the fork go ahead
anyway. So the first `fork_waits_for_this` section of a process adds an audit hook
(``sys.addaudithook``) that waits on Python's ``os.fork`` event, which CPython raises
before any ``before`` handler runs; the ``before`` handler registered by `install` waits
only for a fork that event did not announce (an import in progress in a process that
never compiled). An audit hook cannot be removed and is called on every audited event
(``id()``, ``open()``, ...), which is why only processes that compile get it.

Interpreter exit waits for the same sections: a daemon thread still compiling when the
process ends would be inside tvm or LLVM while their static objects are destroyed
(``terminate called without an active exception``, an abort). The first section of a
process registers an exit handler that waits (at most `EXIT_WAIT_SECONDS`) for the
sections of other threads to end, and from then on parks any other thread that starts
one (it waits for the process to end, holding nothing native).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any

WAIT_SECONDS = 300.0
"""How long a fork waits for other threads' compiles and imports before it goes ahead
anyway (a compile on a busy machine takes tens of seconds)."""

EXIT_WAIT_SECONDS = 60.0
"""How long interpreter exit waits for other threads' compiles to end."""

_installed = False
_install_lock = threading.Lock()
# The thread running the exit handlers once exit has begun: any other thread starting a
# section from then on is parked.
_exiting_thread: int | None = None
_exit_wait_registered = False


class ForkSafeLock:
    """A lock (``reentrant``: an RLock) that a forked child gets fresh, never held.

    For locks that guard one-time set-up: a thread of the parent holding it at the fork
    does not exist in the child, so an inherited lock would stay held forever there.
    """

    def __init__(self, reentrant: bool = False) -> None:
        self._factory: Any = threading.RLock if reentrant else threading.Lock
        self._lock = self._factory()
        _fork_safe_locks.add(self)

    def __enter__(self) -> bool:
        return bool(self._lock.acquire())

    def __exit__(self, *_exc: object) -> None:
        self._lock.release()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """As `threading.Lock.acquire`."""
        return bool(self._lock.acquire(blocking, timeout))

    def release(self) -> None:
        """As `threading.Lock.release`."""
        self._lock.release()

    def renew(self) -> None:
        """Replace the lock with a fresh, released one (the child after a fork)."""
        self._lock = self._factory()


_fork_safe_locks: weakref.WeakSet[ForkSafeLock] = weakref.WeakSet()


def _renew_locks_in_child() -> None:
    for lock in list(_fork_safe_locks):
        lock.renew()
    _forget_sections_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew_locks_in_child)


def _module_locks() -> list[Any]:
    """The import system's per-module locks now alive (CPython's importlib internals)."""
    try:
        from importlib import _bootstrap
    except ImportError:  # pragma: no cover - every CPython has it
        return []
    table = getattr(_bootstrap, "_module_locks", {})
    locks = []
    for ref in list(table.values()):
        lock = ref() if callable(ref) else ref
        if lock is not None:
            locks.append(lock)
    return locks


def _waits_for_an_import_of(thread: int, me: int) -> bool:
    """Whether ``thread`` is blocked on a module lock that thread ``me`` holds."""
    try:
        from importlib import _bootstrap
    except ImportError:  # pragma: no cover - every CPython has it
        return False
    waited: Any = getattr(_bootstrap, "_blocking_on", {}).get(thread)
    # One lock (3.11) or a list of them (3.12 and later).
    for lock in waited if isinstance(waited, list) else [waited]:
        if lock is not None and getattr(lock, "owner", None) == me:
            return True
    return False


def imports_in_progress() -> list[str]:
    """Modules another thread is importing now (that the caller's thread does not block)."""
    me = threading.get_ident()
    busy = []
    for lock in _module_locks():
        owner = getattr(lock, "owner", None)
        if owner is None or owner == me:
            continue
        if _waits_for_an_import_of(owner, me):
            continue  # it waits for an import of ours: waiting for it would deadlock
        busy.append(str(getattr(lock, "name", "?")))
    return busy


def wait_for_imports(timeout: float = WAIT_SECONDS) -> bool:
    """Wait until no other thread is importing (at most ``timeout`` s).

    Returns:
        True when none was left in progress.
    """
    deadline = time.monotonic() + timeout
    while imports_in_progress():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


_sections: dict[int, int] = {}  # thread ident -> depth of fork_waits_for_this
_sections_lock = threading.Lock()
# Held by a forking thread from the moment it saw no section until the fork is done, so
# no thread enters a section in between (a thread at its outermost entry waits here).
_gate = threading.Lock()
_gate_holder: int | None = None  # the forking thread holding the gate
# The frame that called os.fork and its instruction, while its audit event holds the gate:
# once that frame has moved on, the fork is over; if no after-fork handler released the
# gate, the fork never happened (a later audit hook refused it) and the gate is stale.
_gate_caller: tuple[Any, int] | None = None
_audit_hook_added = False

#: Audited attribute assignments (``object.__setattr__``: a function's ``__code__``,
#: ``__defaults__`` or ``__kwdefaults__``, an object's ``__class__``) seen since the audit
#: hook was added. Reading those attributes is itself an audited event (a call of the
#: hook, ~0.5 us), so tl_jit's memo guard compares this count instead.
attribute_writes = 0


def attribute_writes_counted() -> bool:
    """Whether `attribute_writes` counts (the audit hook is added: after the first
    `fork_waits_for_this` section)."""
    return _audit_hook_added


def _gate_is_stale() -> bool:
    """Whether the gate is held for a fork that is over without releasing it."""
    holder, caller = _gate_holder, _gate_caller
    if holder is None or caller is None:
        return False
    frame = sys._current_frames().get(holder)
    if frame is None:
        return True  # the forking thread is gone
    target, instruction = caller
    while frame is not None:
        if frame is target:
            return bool(frame.f_lasti != instruction)
        frame = frame.f_back
    return True  # the frame that called os.fork has returned (it raised)


def _release_stale_gate() -> None:
    global _gate_holder, _gate_caller
    with _sections_lock:
        if _gate_holder is None or not _gate_is_stale():
            return
        _gate_holder = None
        _gate_caller = None
        with contextlib.suppress(RuntimeError):  # released meanwhile
            _gate.release()


def _acquire_gate(timeout: float) -> bool:
    """Take the gate within ``timeout`` s, freeing it from a fork that never happened."""
    deadline = time.monotonic() + timeout
    while not _gate.acquire(timeout=0.01):
        if _gate_is_stale():
            _release_stale_gate()
        if time.monotonic() > deadline:
            return False
    return True


@contextlib.contextmanager
def fork_waits_for_this() -> Iterator[None]:
    """A section a ``fork()`` from another thread waits for (a compile, which holds locks
    in native code that a child could not release)."""
    ident = threading.get_ident()
    with _sections_lock:
        nested = _sections.get(ident, 0) > 0
    if not nested:
        if _exiting_thread is not None and _exiting_thread != ident:
            threading.Event().wait()  # exit has begun: wait for the process to end
        if not _exit_wait_registered:
            _add_audit_hook()
        # The gate: not while a fork is under way. A fork that its audit event announced
        # but that never happened (a later audit hook refused it) left the gate closed:
        # `_acquire_gate` sees that its caller moved on and opens it.
        entered = _acquire_gate(WAIT_SECONDS)
        try:
            with _sections_lock:
                _sections[ident] = _sections.get(ident, 0) + 1
        finally:
            if entered:
                _gate.release()
    else:
        with _sections_lock:
            _sections[ident] += 1
    try:
        yield
    finally:
        with _sections_lock:
            depth = _sections.pop(ident, 1) - 1
            if depth:
                _sections[ident] = depth


def sections_in_progress() -> int:
    """How many other threads are inside `fork_waits_for_this` now (not counting one
    blocked on an import the caller's thread holds: waiting for it would deadlock)."""
    me = threading.get_ident()
    with _sections_lock:
        others = [ident for ident, depth in _sections.items() if depth and ident != me]
    return sum(1 for ident in others if not _waits_for_an_import_of(ident, me))


def _wait_and_close_the_gate() -> None:
    """Wait (at most `WAIT_SECONDS`) until no other thread imports or is inside a section,
    then hold the gate until the fork is done (released after it, in either process)."""
    global _gate_holder
    me = threading.get_ident()
    if _gate_holder == me:
        return  # closed by this fork's audit event (or by one that never happened)
    deadline = time.monotonic() + WAIT_SECONDS
    wait_for_imports(WAIT_SECONDS)
    while time.monotonic() < deadline:
        if not _acquire_gate(max(deadline - time.monotonic(), 0.0)):
            break
        if not sections_in_progress():
            _gate_holder = me
            return
        _gate.release()
        time.sleep(0.001)
    _acquire_gate(WAIT_SECONDS)  # waited long enough: fork anyway
    _gate_holder = me


def _audit_fork(event: str, _args: tuple[Any, ...]) -> None:
    # Called on every audited event of the process: the common case returns at once.
    global _gate_caller, attribute_writes
    if event == "object.__setattr__":
        attribute_writes += 1
    elif event == "os.fork" or event == "os.forkpty":
        try:
            _wait_and_close_the_gate()
            caller = sys._getframe(1)
            _gate_caller = (caller, caller.f_lasti)
        except Exception:  # an exception from an audit hook would refuse the fork itself
            return  # (at interpreter exit, say); tl_runtime's before-fork handler still waits


def _add_audit_hook() -> None:
    """Once per process, at its first section: the exit wait and the fork audit hook."""
    global _audit_hook_added, _exit_wait_registered
    install()  # the after-fork handlers that release the gate the hook closes
    with _install_lock:
        if not _exit_wait_registered:
            atexit.register(wait_for_sections_at_exit)
            _exit_wait_registered = True
        if _audit_hook_added or not hasattr(os, "register_at_fork"):
            return
        sys.addaudithook(_audit_fork)
        _audit_hook_added = True


def wait_for_sections_at_exit(timeout: float = EXIT_WAIT_SECONDS) -> bool:
    """Park every later section of another thread, then wait up to ``timeout`` s for
    those in progress to end (the exit handler; module docstring).

    Returns:
        True when no other thread was left inside a section.
    """
    global _exiting_thread
    _exiting_thread = threading.get_ident()
    deadline = time.monotonic() + timeout
    while sections_in_progress():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


def _before_fork() -> None:
    # Runs after the before-handlers registered later (newest first); a fork whose audit
    # event was seen has waited already, with no such handler's lock taken.
    _wait_and_close_the_gate()


def _after_fork_in_parent() -> None:
    global _gate_holder, _gate_caller
    if _gate_holder == threading.get_ident():
        _gate_holder = None
        _gate_caller = None
        _gate.release()


def _forget_sections_in_child() -> None:
    global _sections_lock, _gate, _gate_holder, _gate_caller, _exiting_thread
    _exiting_thread = None  # the child's own exit parks its own threads
    _sections.clear()
    _sections_lock = threading.Lock()
    _gate = threading.Lock()
    _gate_holder = None
    _gate_caller = None


def install() -> None:
    """Register the before-fork wait once per process (idempotent; no-op without fork)."""
    global _installed
    with _install_lock:
        if _installed or not hasattr(os, "register_at_fork"):
            return
        os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent)
        _installed = True
