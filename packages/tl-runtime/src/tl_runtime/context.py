"""Supplies the context symbols TVM-built CPU libraries expect, before any kernel library loads.

A TVM-built CPU library holds function-pointer slots (``__TVMBackendParallelLaunch``,
``__TVMBackendParallelBarrier``, ``__TVMBackendAllocWorkspace``,
``__TVMBackendFreeWorkspace``) that the loader fills from symbols registered with
``TVMFFIEnvModRegisterContextSymbol``. Under tvm-ffi alone nobody registers them, and a
parallel kernel would call through NULL. This module registers them once per process from
a small C helper (OpenMP, or pthreads when OpenMP is unavailable or
``$TL_RUNTIME_NO_OPENMP`` is set): the one a built wheel ships (hatch_build.py), else one
built on first use; without either (an editable install with no C compiler) it registers
fallbacks that make serial kernels run and parallel ones fail with a clear error.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tl_runtime.errors import NativeBuildError
from tl_runtime.fork_safety import ForkSafeLock

_HELPER_SOURCE = Path(__file__).parent / "_native" / "context_helper.c"
_HELPER_NAME = "tl_rt_context_helper"


def shipped_helper() -> Path | None:
    """The context helper a built wheel ships, if it was built from this source (its
    ``.sha256`` record matches ``context_helper.c``); None in editable installs, and when
    ``$TL_RUNTIME_NO_OPENMP`` asks for a pthreads-only helper built here."""
    if os.environ.get("TL_RUNTIME_NO_OPENMP"):
        return None
    import hashlib

    directory = _HELPER_SOURCE.parent
    try:
        recorded = (directory / f"{_HELPER_NAME}.sha256").read_text().strip()
        source = _HELPER_SOURCE.read_bytes()
    except OSError:
        return None
    candidate = directory / f"{_HELPER_NAME}.so"
    if recorded != hashlib.sha256(source).hexdigest() or not candidate.is_file():
        return None
    return candidate


_SYMBOLS = (
    ("__TVMBackendParallelLaunch", "tl_rt_parallel_launch"),
    ("__TVMBackendParallelBarrier", "tl_rt_parallel_barrier"),
    ("__TVMBackendAllocWorkspace", "tl_rt_alloc_workspace"),
    ("__TVMBackendFreeWorkspace", "tl_rt_free_workspace"),
    # The slot of checked-mode kernels (tl_codegen_cpu's tl_checked.h): their reports of
    # out-of-bounds accesses, which `take_out_of_bounds` hands to the caller.
    ("__tl_rt_report_out_of_bounds", "tl_rt_report_out_of_bounds"),
)
# Host stubs of GPU modules reference these tvm-ffi functions through context slots too.
_FFI_FORWARDS = (
    "TVMFFIEnvModLookupFromImports",
    "TVMFFIFunctionCall",
    "TVMFFIHandleInitOnce",
    "TVMFFIErrorSetRaisedFromCStr",
)


@dataclass(frozen=True)
class ContextStatus:
    """What the process registered.

    Attributes:
        helper_path: the built helper library, or None when the fallbacks are in use.
        parallel: whether parallel kernels can run.
        openmp: whether the helper uses OpenMP (else pthreads).
        reason: why the helper is missing (empty when it is present).
    """

    helper_path: Path | None
    parallel: bool
    openmp: bool
    reason: str


_lock = ForkSafeLock()
_status: ContextStatus | None = None
_helper: ctypes.CDLL | None = None
_keepalive: list[Any] = []


def libtvm_ffi() -> ctypes.CDLL:
    """Return libtvm_ffi loaded with RTLD_GLOBAL (the library tvm_ffi itself uses)."""
    from tl_runtime.tvm_ffi_paths import libtvm_ffi_path  # no import of the Python package

    return ctypes.CDLL(libtvm_ffi_path(), mode=ctypes.RTLD_GLOBAL)


def ensure_context_symbols() -> ContextStatus:
    """Register the context symbols once per process (idempotent, thread-safe).

    Must run before the first kernel library is loaded: the loader fills a library's
    slots when it loads it. Never raises for a missing compiler: the status says so.

    Returns:
        The ContextStatus of this process.
    """
    global _status, _helper
    with _lock:
        if _status is not None:
            return _status
        from tl_runtime.thread_team import apply_default_wait_policy, apply_thread_count_env

        # Before the helper's OpenMP runtime loads: the wait policy, and OMP_NUM_THREADS
        # within `max_team_threads` (libgomp ends the process building a team of 100000).
        apply_default_wait_policy()
        env_threads = apply_thread_count_env().threads
        ffi = libtvm_ffi()
        register = ffi.TVMFFIEnvModRegisterContextSymbol
        register.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
        register.restype = ctypes.c_int
        from tl_runtime.native_build import build_shared_library

        try:
            flag_sets = [["-O2", "-fopenmp", "-pthread"], ["-O2", "-pthread"]]
            if os.environ.get("TL_RUNTIME_NO_OPENMP"):
                flag_sets = flag_sets[1:]
            path = shipped_helper()
            try:
                helper = ctypes.CDLL(str(path)) if path is not None else None
            except OSError:  # e.g. a vendored library missing: build one for this machine
                helper = None
            if helper is None:
                path = build_shared_library(_HELPER_NAME, [_HELPER_SOURCE], flag_sets)
                helper = ctypes.CDLL(str(path))
        except (NativeBuildError, OSError) as exc:
            reason = str(exc)
            addresses = _fallback_addresses(ffi, reason)
            status = ContextStatus(None, parallel=False, openmp=False, reason=reason)
        else:
            addresses = {
                sym: ctypes.cast(getattr(helper, impl), ctypes.c_void_p).value
                for sym, impl in _SYMBOLS
            }
            helper.tl_rt_set_num_threads.argtypes = [ctypes.c_int]
            helper.tl_rt_take_out_of_bounds.restype = ctypes.c_int64
            helper.tl_rt_take_out_of_bounds.argtypes = [
                ctypes.POINTER(ctypes.c_int64),
                ctypes.POINTER(ctypes.c_int32),
                ctypes.POINTER(ctypes.c_int64),
                ctypes.POINTER(ctypes.c_int64),
                ctypes.POINTER(ctypes.c_int32),
            ]
            helper.tl_rt_require_stack.argtypes = [ctypes.c_size_t]
            helper.tl_rt_require_stack.restype = None
            for name in ("tl_rt_stack_left", "tl_rt_default_stack_bytes", "tl_rt_team_stack_bytes"):
                getattr(helper, name).argtypes = []
                getattr(helper, name).restype = ctypes.c_size_t
            _helper = helper
            status = ContextStatus(path, True, bool(helper.tl_rt_uses_openmp()), "")
            if env_threads:
                _apply_env_threads(helper, env_threads)
        for name in _FFI_FORWARDS:
            addresses["__" + name] = ctypes.cast(getattr(ffi, name), ctypes.c_void_p).value
        for sym, address in addresses.items():
            if register(sym.encode(), address) != 0:
                raise RuntimeError(f"TVMFFIEnvModRegisterContextSymbol({sym}) failed")
        _status = status
        return status


def _fallback_addresses(ffi: ctypes.CDLL, reason: str) -> dict[str, int | None]:
    """Python-callback stand-ins used when the C helper cannot be built."""
    set_error = ffi.TVMFFIErrorSetRaisedFromCStr
    set_error.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    message = (
        "this kernel runs a parallel loop, which needs the tl-runtime C helper; it could "
        f"not be built: {reason}"
    ).encode()
    libc = ctypes.CDLL(None)
    posix_memalign = libc.posix_memalign
    posix_memalign.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_size_t]
    free = libc.free
    free.argtypes = [ctypes.c_void_p]

    launch_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int)
    barrier_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p)
    alloc_t = ctypes.CFUNCTYPE(
        ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_uint64, ctypes.c_int, ctypes.c_int
    )
    free_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p)

    def refuse_parallel(_f: int | None, _c: int | None, _n: int) -> int:
        set_error(b"RuntimeError", message)
        return -1

    def refuse_barrier(_t: int, _e: int | None) -> int:
        set_error(b"RuntimeError", message)
        return -1

    def alloc(_dt: int, _di: int, nbytes: int, _c: int, _b: int) -> int | None:
        out = ctypes.c_void_p()
        if posix_memalign(ctypes.byref(out), 64, max(int(nbytes), 1)) != 0:
            return None
        return out.value

    def release(_dt: int, _di: int, ptr: int | None) -> int:
        free(ptr)
        return 0

    callbacks = [
        launch_t(refuse_parallel),
        barrier_t(refuse_barrier),
        alloc_t(alloc),
        free_t(release),
    ]
    _keepalive.extend(callbacks)
    return {
        sym: ctypes.cast(cb, ctypes.c_void_p).value
        for (sym, _), cb in zip(_SYMBOLS[: len(callbacks)], callbacks, strict=True)
    }


def _apply_env_threads(helper: ctypes.CDLL, count: int) -> None:
    """Bound the helper's default team to ``count`` (``OMP_NUM_THREADS`` lowered to
    `thread_team.max_team_threads`), and this thread's OpenMP team where the OpenMP runtime
    read the variable before tl_runtime lowered it (never raises a smaller setting)."""
    helper.tl_rt_set_thread_cap.argtypes = [ctypes.c_int]
    helper.tl_rt_set_thread_cap(count)
    try:  # the helper's OpenMP runtime (a dependency: dlsym searches it), if any
        get_max, set_threads = helper.omp_get_max_threads, helper.omp_set_num_threads
    except AttributeError:
        return
    set_threads.argtypes = [ctypes.c_int]
    set_threads.restype = None
    if int(get_max()) > count:
        set_threads(count)


def set_num_threads(count: int) -> None:
    """Set the number of threads parallel kernels use (0 = OpenMP's default: all cores, or
    ``OMP_NUM_THREADS``, never more than `thread_team.max_team_threads`).

    Raises:
        ValueError: ``count`` is not an int in [0, `thread_team.max_team_threads`].
        RuntimeError: the C helper is unavailable (parallel kernels cannot run at all).
    """
    from tl_runtime.thread_team import validate_thread_count

    count = validate_thread_count(count)
    status = ensure_context_symbols()
    if _helper is None:
        raise RuntimeError(f"parallel kernels are unavailable: {status.reason}")
    _helper.tl_rt_set_num_threads(count)


NAME_WORDS = 4
"""How many int64 words carry a buffer's name to the report (8 bytes each)."""


def pack_name(name: str) -> tuple[int, ...]:
    """``name`` as `NAME_WORDS` signed little-endian int64 words (UTF-8, cut to fit)."""
    data = name.encode("utf-8")[: 8 * NAME_WORDS].ljust(8 * NAME_WORDS, b"\0")
    return tuple(
        int.from_bytes(data[i : i + 8], "little", signed=True) for i in range(0, len(data), 8)
    )


def unpack_name(words: Sequence[int]) -> str:
    """The name `pack_name` packed."""
    data = b"".join(int(w).to_bytes(8, "little", signed=True) for w in words)
    return data.rstrip(b"\0").decode("utf-8", errors="replace")


@dataclass(frozen=True)
class OutOfBoundsReport:
    """The first out-of-bounds access a checked kernel reported since the last take.

    Attributes:
        buffer: the buffer's name in the kernel (its first 32 bytes).
        dim: the dimension whose index was out of range (0-based).
        index: that index.
        extent: that dimension's extent.
        line: the kernel source's line of the access (0: an access the compiler generated).
        count: how many out-of-bounds accesses were reported (only the first is kept).
    """

    buffer: str
    dim: int
    index: int
    extent: int
    line: int
    count: int


def take_out_of_bounds() -> OutOfBoundsReport | None:
    """The first out-of-bounds access reported by checked kernels since the last call.

    Clears the record. None when nothing was reported (or the C helper is unavailable,
    in which case no checked kernel can load).
    """
    ensure_context_symbols()
    if _helper is None:
        return None
    name = (ctypes.c_int64 * NAME_WORDS)()
    dim, line = ctypes.c_int32(), ctypes.c_int32()
    index, extent = ctypes.c_int64(), ctypes.c_int64()
    count = int(
        _helper.tl_rt_take_out_of_bounds(
            name, ctypes.byref(dim), ctypes.byref(index), ctypes.byref(extent), ctypes.byref(line)
        )
    )
    if count == 0:
        return None
    return OutOfBoundsReport(
        unpack_name(list(name)), dim.value, index.value, extent.value, line.value, count
    )


def last_launch_threads() -> int:
    """Return how many threads ran the most recent parallel launch (0 if none yet)."""
    ensure_context_symbols()
    return 0 if _helper is None else int(_helper.tl_rt_last_launch_threads())


def stack_left_function() -> Callable[[], int] | None:
    """Return a function giving the bytes of stack left on the calling thread, or None.

    None when the C helper is unavailable (the figure cannot be read from Python). The
    function returns 0 where the thread's stack bounds are unknown.
    """
    ensure_context_symbols()
    if _helper is None:
        return None
    function: Callable[[], int] = _helper.tl_rt_stack_left
    return function


def default_thread_stack_bytes() -> int | None:
    """Return the stack size new threads get by default (glibc's, from ``ulimit -s``).

    None when the C helper is unavailable.
    """
    ensure_context_symbols()
    return None if _helper is None else int(_helper.tl_rt_default_stack_bytes()) or None


def require_team_stack(nbytes: int) -> None:
    """Give the helper's pthread team threads stacks of at least ``nbytes`` (never less).

    A no-op when the C helper is unavailable (then no team runs at all).

    Raises:
        ValueError: ``nbytes`` is not an int >= 0.
    """
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0:
        raise ValueError(f"require_team_stack: nbytes: expected an int >= 0, got {nbytes!r}")
    ensure_context_symbols()
    if _helper is not None:
        _helper.tl_rt_require_stack(nbytes)


def team_stack_bytes() -> int:
    """Return the stack size the helper's pthread team threads get (0: the default)."""
    ensure_context_symbols()
    return 0 if _helper is None else int(_helper.tl_rt_team_stack_bytes())


def is_forked_child() -> bool:
    """Return whether this process was forked after the helper loaded (OpenMP teams of one)."""
    ensure_context_symbols()
    return _helper is not None and bool(_helper.tl_rt_is_forked_child())
