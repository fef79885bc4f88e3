"""The ``tvm_ffi`` adapter: loads the library through tvm-ffi and calls its packed entry.

Exit with calls in flight. At interpreter exit, a daemon thread that returns from a
tvm-ffi call finds the interpreter finalizing and is ended by ``pthread_exit``, whose
unwinding through tvm-ffi's C++ frames calls ``std::terminate``: the process aborts
(exit 134) after the program finished. So an ``atexit`` handler (registered with the first
adapter) parks the adapters first (their calls block forever instead of entering
tvm-ffi, so a daemon thread waits harmlessly until the process ends) and then waits, up
to `EXIT_DRAIN_SECONDS`, for calls already inside tvm-ffi to return. The parking swaps
the adapters' launch functions, so calls cost nothing more while the program runs.

Compiles come first: a daemon thread whose compile (or first eager call) ends during
exit goes on to load its kernel and call it, through an adapter made after the others
were parked. So the handler first waits for the compiles in progress
(`tl_runtime.fork_safety.wait_for_sections_at_exit`, which parks any compile started
later), and an adapter made once the drain began is parked as it is made.
"""

from __future__ import annotations

import atexit
import sys
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tl_runtime.adapters.base import Availability, CallFunction, load_tvm_ffi_library, pack_result
from tl_runtime.adapters.fast_path import build_fast_path
from tl_runtime.checking import ArgumentChecker
from tl_runtime.fork_safety import ForkSafeLock, wait_for_sections_at_exit
from tl_runtime.manifest import Manifest
from tl_runtime.tensor_views import mark_written_in_place


class TvmFfiAdapter:
    """Calls the packed entry (``int f(void*, const TVMFFIAny*, int32_t, TVMFFIAny*)``) via tvm-ffi.

    Args:
        manifest: the artifact's manifest.
        directory: the artifact directory.
        checker: the kernel's argument checker.

    Raises:
        ArtifactError: the library cannot be loaded or lacks the entry.
    """

    key = "tvm_ffi"

    def __init__(self, manifest: Manifest, directory: Path, checker: ArgumentChecker) -> None:
        self.manifest = manifest
        self.checker = checker
        self.module, self.function = load_tvm_ffi_library(manifest, directory)
        self._wide_unsigned = [
            index
            for index, param in enumerate(checker.plan.params)
            if not param.is_tensor
            and param.dtype.is_integer
            and int(param.dtype.high or 0) > _INT64_MAX
        ]
        self._calls: list[Callable[..., Any]] = []
        _watch(self)

    @classmethod
    def probe(cls) -> Availability:
        """Available wherever tvm-ffi imports (it is tl-runtime's one hard dependency)."""
        try:
            import tvm_ffi  # noqa: F401
        except ImportError as exc:
            return Availability(False, f"apache-tvm-ffi is not importable: {exc}")
        return Availability(True)

    def call_checked(self, args: tuple[Any, ...]) -> Any:
        """The complete path: full checks and copies, then the call."""
        prepared = self.checker.prepare(args)
        for index in self._wide_unsigned:
            # tvm-ffi passes an int as int64: a uint64 of 2**63 or more goes as the int64
            # of the same 64 bits, which the kernel reads back as that uint64.
            if prepared.args[index] > _INT64_MAX:
                prepared.args[index] -= 1 << 64
        self.function(*prepared.args)
        mark_written_in_place(prepared.written_torch)
        return pack_result(prepared.outputs)

    def make_call(self) -> CallFunction:
        """Return the generated fast path (falls back to ``call_checked``).

        numpy arguments take the generated checks; other tensors (torch) take the compiled
        launcher's checks (dtype, shape, strides, device, alignment, autograd, read straight
        through the DLPack C exchange API) and go to tvm-ffi's call, which takes them
        through the same API. Without the compiled launcher (an editable
        install with no C compiler) they take ``call_checked``.
        """
        call = build_fast_path(
            self.checker, self.function, self.call_checked, self._make_guarded_call
        )
        self._calls.append(call)
        return call

    def park(self) -> None:
        """Make every later call block forever instead of entering tvm-ffi (exit only)."""
        self.function = _park
        for call in self._calls:
            namespace = getattr(call, "__globals__", None)
            # Only a generated fast path has its own namespace (its launch and slow path).
            if (
                isinstance(namespace, dict)
                and "launch" in namespace
                and "__name__" not in namespace
            ):
                namespace["launch"] = _park
                namespace["slow"] = _park

    def _make_guarded_call(self) -> Callable[[tuple[Any, ...]], Any]:
        """The path for non-numpy args: the compiled launcher checks, then tvm-ffi calls."""
        from tl_runtime.adapters.cython_adapter import launcher_extension, make_launcher
        from tl_runtime.errors import AdapterUnavailableError

        try:
            extension = launcher_extension()
        except AdapterUnavailableError:
            return self.call_checked
        launcher = make_launcher(extension, 0, self.checker, self.call_checked, self.function)
        run: Callable[[tuple[Any, ...]], Any] = launcher.run
        return run


_INT64_MAX = 2**63 - 1
_FAST_PATH_FILE = build_fast_path.__code__.co_filename  # fast_path.py's own frames

EXIT_DRAIN_SECONDS = 60.0
"""How long interpreter exit waits for calls already inside tvm-ffi to return."""

_adapters: weakref.WeakSet[TvmFfiAdapter] = weakref.WeakSet()
_registered = False
_draining = False  # set once the exit handler parks the adapters
_register_lock = ForkSafeLock()


def _park(*_args: Any) -> None:
    """Stand-in for a launch after exit began: wait for the process to end."""
    threading.Event().wait()


def _watch(adapter: TvmFfiAdapter) -> None:
    global _registered
    with _register_lock:
        if _draining:
            adapter.park()  # made after the drain began: it never enters tvm-ffi again
        _adapters.add(adapter)
        if not _registered:
            atexit.register(drain_calls_at_exit)
            _registered = True


def _in_tvm_ffi_call(frame: Any) -> bool:
    """Whether a thread whose innermost Python frame is ``frame`` may be inside tvm-ffi:
    the generated fast path, or `fast_path`'s own frames (the first torch call of a
    kernel resolves its checked path there and calls tvm-ffi from that frame), the
    complete path, or a library being loaded."""
    code = frame.f_code
    return (
        code.co_filename.startswith("<tl_runtime fast path")
        or code.co_filename == _FAST_PATH_FILE
        or code is TvmFfiAdapter.call_checked.__code__
        or code is load_tvm_ffi_library.__code__
    )


def calls_in_flight() -> list[int]:
    """Ids of the other threads that are inside (or about to enter) a tvm-ffi call."""
    me = threading.get_ident()
    return [
        ident
        for ident, frame in sys._current_frames().items()
        if ident != me and _in_tvm_ffi_call(frame)
    ]


def drain_calls_at_exit(timeout: float = EXIT_DRAIN_SECONDS) -> bool:
    """Park every adapter, then wait up to ``timeout`` s for in-flight calls to return.

    Compiles in other threads are waited for first (and later ones parked): one ending
    after the drain would load and call its kernel through an adapter made too late to
    be parked here (module docstring).

    Returns:
        True when no call was left in flight.
    """
    global _draining
    deadline = time.monotonic() + timeout
    wait_for_sections_at_exit(timeout)
    with _register_lock:
        _draining = True
        adapters = list(_adapters)
    for adapter in adapters:
        adapter.park()
    while calls_in_flight():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True
