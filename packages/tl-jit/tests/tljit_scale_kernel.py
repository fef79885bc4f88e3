"""A ``@jit`` kernel module for subprocess tests: tvm is imported only when it compiles."""

from __future__ import annotations

from typing import Any

import tl_jit


@tl_jit.jit(out_idx=-1, target="llvm")
def scale(n: int, factor: float, repeat: int = 1, fail: bool = False) -> Any:
    """``B = A * factor`` built by the fake backend (installed in whichever process compiles,
    autotune workers included); ``fail=True`` raises instead of returning a kernel."""
    import tljit_fake_backend

    tljit_fake_backend.install()
    if fail:
        raise ValueError("this configuration fails on purpose")
    return tljit_fake_backend.make_scale(n, factor, repeat)


def reference(a: Any) -> Any:
    """What ``scale(n, 2.0)`` computes."""
    return a * 2.0


tuned_scale = tl_jit.autotune(
    configs=[{"repeat": 3000}, {"repeat": 1}, {"repeat": 1, "fail": True}],
    warmup=1,
    rep=5,
    ref_prog=reference,
    max_workers=2,
)(scale)


FRAGILE_MARKER_ENV = "TLJIT_FRAGILE_MARKER"


@tl_jit.jit(out_idx=-1, target="llvm")
def fragile_scale(n: int, factor: float, repeat: int = 1, crash: str = "") -> Any:
    """`scale` whose build misbehaves on request: ``crash`` is ``"abort"``, ``"segfault"``,
    ``"exit"`` (``os._exit(3)``), ``"raise"`` (a ValueError), ``"sys-exit"`` (``SystemExit(0)``),
    ``"keyboard-interrupt"`` (raised by the build itself), ``"generator-exit"`` or ``"hang"`` (appends its pid
    as a line to the file named by ``TLJIT_FRAGILE_MARKER``, when set, and sleeps for an
    hour); or
    the kernel misbehaves when run: ``"segfault-when-run"`` builds one that reads far
    outside its input (SIGSEGV on its first call).

    The dying faults strike before tvm is imported (as a user's config could): the
    worker dies without first spending ~5 s importing tvm (and a SIGSEGV without tvm's
    handler symbolizing a backtrace), which keeps the fault tests cheap; ``"hang"`` comes
    after the import, as a real build's hang would, so an interrupt reaches a search well
    under way; the ``"segfault-when-run"`` kernel dies with tvm loaded."""
    import ctypes
    import os
    import time

    if crash == "hang":
        import tljit_fake_backend

        tljit_fake_backend.install()
    if crash == "abort":
        os.abort()
    elif crash == "segfault":
        ctypes.string_at(0)
    elif crash == "exit":
        os._exit(3)
    elif crash == "raise":
        raise ValueError("this configuration does not compile, on purpose")
    elif crash == "sys-exit":
        raise SystemExit(0)  # a builder calling sys.exit(0)
    elif crash == "keyboard-interrupt":
        raise KeyboardInterrupt  # raised by the builder's code, not a Ctrl-C
    elif crash == "generator-exit":
        raise GeneratorExit("a BaseException that is not an Exception")
    elif crash == "hang":
        marker = os.environ.get(FRAGILE_MARKER_ENV)
        if marker:
            with open(marker, "a") as handle:
                handle.write(f"{os.getpid()}\n")
        time.sleep(3600)
    import tljit_fake_backend

    tljit_fake_backend.install()
    if crash == "segfault-when-run":
        return tljit_fake_backend.make_wild_read(n)
    return tljit_fake_backend.make_scale(n, factor, repeat)


def sleep_then_return(seconds: float) -> float:
    """A task for executor tests: sleeps, then returns ``seconds``."""
    import time

    time.sleep(seconds)
    return seconds
