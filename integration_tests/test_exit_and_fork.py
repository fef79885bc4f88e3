"""Process exit with daemon threads inside kernel calls, and fork during a first call.

Each case runs in its own process with a timeout, so an abort or a hang fails the test
instead of the suite. Before: exit aborted with ``terminate called without an active
exception`` (exit 134) on the tvm_ffi adapter; a child forked while another thread was
in its first eager call waited forever (an import lock, or tl_runtime's set-up lock,
held by a thread the child does not have). Then the fork waited for that call from a
before-fork handler that ran after logging's, which holds logging's lock through the
fork: the call, making a logger, could not finish, and the fork gave up after 300 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _python(script: str, tmp_path: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TL_CACHE_DIR": str(tmp_path / "cache")}
    for name in ("TL_DISABLE_CACHE", "TL_DEBUG", "TL_INTERPRET"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=tmp_path,
    )


DAEMONS = textwrap.dedent(
    f"""
    import sys, threading, time
    sys.path.insert(0, {str(HERE)!r})
    import numpy as np, tl_jit
    import checked_kernels
    kernel = tl_jit.compile(
        checked_kernels.in_bounds(64, 256), target="c", execution_backend="{{adapter}}"
    )
    a = np.ones((64, 256), np.float32)

    def loop():
        b = np.zeros_like(a)
        while True:
            kernel(a, b)

    for _ in range(4):
        threading.Thread(target=loop, daemon=True).start()
    time.sleep(0.3)
    print("exiting")
    """
)


@pytest.mark.parametrize("adapter", ["tvm_ffi", "cython"])
def test_exit_with_daemon_threads_in_kernel_calls_is_clean(tmp_path: Path, adapter: str) -> None:
    for _ in range(3):  # the abort depended on timing: three exits, each must be clean
        proc = _python(DAEMONS.format(adapter=adapter), tmp_path)
        assert "terminate called" not in proc.stderr
        assert proc.returncode == 0, proc.stderr
        assert "exiting" in proc.stdout


COMPILING_DAEMON = textwrap.dedent(
    f"""
    import sys, threading, time
    sys.path.insert(0, {str(HERE)!r})
    import tl_jit, checked_kernels
    tl_jit.compile(checked_kernels.in_bounds(4, 8), target="llvm")  # tvm is loaded
    for rows in (24, 40):  # compiles in flight when the main thread returns
        threading.Thread(
            target=lambda r=rows: tl_jit.compile(checked_kernels.in_bounds(r, 96), target="llvm"),
            daemon=True,
        ).start()
    time.sleep({{delay}})
    print("exiting")
    """
)


def test_exit_with_daemon_threads_compiling_is_clean(tmp_path: Path) -> None:
    """A daemon thread inside a compile at exit: exit waits for it (it aborted in tvm's
    or LLVM's static destructors), and parks a compile started after exit began."""
    for delay in (0.02, 0.1, 0.3):
        proc = _python(COMPILING_DAEMON.format(delay=delay), tmp_path)
        assert "terminate called" not in proc.stderr
        assert proc.returncode == 0, proc.stderr
        assert "exiting" in proc.stdout


EAGER_COMPILING_DAEMONS = textwrap.dedent(
    """
    import threading, time
    import numpy as np, tl_jit, tl_jit.language as T

    @tl_jit.jit(target="llvm", execution_backend="tvm_ffi")
    def add(A, v: float = 1.0):
        N = T.dynamic("N")
        A: T.Tensor[[N], T.float32]
        C = T.empty((N,), T.float32)
        with T.Kernel(T.ceildiv(N, 64), threads=1) as bx:
            for i in T.serial(64):
                if bx * 64 + i < N:
                    C[bx * 64 + i] = A[bx * 64 + i] + v
        return C

    a = np.ones(1 << 12, np.float32)
    add(a)  # tvm is loaded, one kernel built and called

    def compile_and_call():
        v = 2.0
        while True:  # every v is a new specialization: a compile, then a new kernel's call
            add(a, v)
            v += 1.0

    for _ in range(2):
        threading.Thread(target=compile_and_call, daemon=True).start()
    time.sleep({delay})
    print("exiting")
    """
)


def test_exit_with_daemon_threads_compiling_and_calling_is_clean(tmp_path: Path) -> None:
    """A compile that ends while exit runs goes on to load and call its kernel through a
    new tvm_ffi adapter. The adapters used to be parked before the compiles were waited
    for, so that adapter was not, and its call returned into a finalizing interpreter:
    ``terminate called without an active exception`` (exit 134) in about half the runs.
    Now the compiles are waited for first and an adapter made later is parked."""
    for delay in (0.02, 0.05, 0.2, 0.5):
        script = tmp_path / f"daemons_{delay}.py"  # an eager function's source is read
        script.write_text(EAGER_COMPILING_DAEMONS.format(delay=delay))
        proc = _python(f"import runpy; runpy.run_path({str(script)!r})", tmp_path)
        assert "terminate called" not in proc.stderr
        assert proc.returncode == 0, proc.stderr
        assert "exiting" in proc.stdout


def test_exit_parks_the_adapters(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(HERE)!r})
        import tl_jit, checked_kernels
        from tl_runtime.adapters import tvm_ffi_adapter
        kernel = tl_jit.compile(
            checked_kernels.in_bounds(4, 8), target="c", execution_backend="tvm_ffi"
        )
        adapter = kernel.runtime_kernel._adapter if hasattr(kernel.runtime_kernel, "_adapter") else None
        assert tvm_ffi_adapter.drain_calls_at_exit(timeout=5)
        for watched in tvm_ffi_adapter._adapters:
            assert watched.function is tvm_ffi_adapter._park
        print("PARKED", len(tvm_ffi_adapter._adapters))
        """
    )
    proc = _python(script, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "PARKED 1" in proc.stdout


FORK_DURING_FIRST_CALLS = textwrap.dedent(
    f"""
    import os, sys, threading, time
    sys.path.insert(0, {str(ROOT / "examples")!r})
    import numpy as np
    from tl_runtime import fork_safety
    from elementwise_eager import add
    fork_safety.WAIT_SECONDS = 90.0  # a fork that waits in vain gives up soon: fail fast
    # One process, three first calls (a new shape is a new kernel): the first also imports
    # tl_ir.eager, tvm and the backends lazily; a fork comes at a different moment of each.
    for rows, delay in ((64, 0.0), (96, 0.05), (128, 0.3)):
        a = np.ones((rows, 64), np.float32)
        thread = threading.Thread(target=lambda: add(a, a))
        thread.start()
        time.sleep(delay)
        pid = os.fork()
        if pid == 0:
            import faulthandler
            faulthandler.dump_traceback_later(60, exit=True)  # a hang ends the child, loudly
            os._exit(0 if (add(a, a) == 2).all() else 3)
        _, status = os.waitpid(pid, 0)
        thread.join()
        print("CHILD", rows, os.waitstatus_to_exitcode(status), flush=True)
    """
)


def test_fork_during_a_first_eager_call_does_not_hang_the_child(tmp_path: Path) -> None:
    # The fork waits for the other thread's first call (imports and a compile); the child
    # then calls the kernel. Before: the fork's wait ran in a before-fork handler that ran
    # after logging's (which holds logging's lock); the compile, making a logger, waited on
    # that lock until the wait gave up (300 s) and the child inherited a half-done import.
    proc = _python(FORK_DURING_FIRST_CALLS, tmp_path, timeout=240)
    assert proc.returncode == 0, proc.stderr
    for rows in (64, 96, 128):
        assert f"CHILD {rows} 0" in proc.stdout, proc.stdout + proc.stderr


def test_fork_waits_for_a_section_that_needs_a_lock_a_newer_fork_handler_takes(
    tmp_path: Path,
) -> None:
    """Deterministic: a compile section that needs logging's lock while a fork is under way.

    logging, imported after tl_runtime, registers a before-fork handler that runs first
    and holds logging's lock through the fork. A wait in tl_runtime's own handler could
    not see the section finish (it waits on that lock); the wait on the fork's audit event
    runs before every handler. WAIT_SECONDS is short here, so the broken order fails fast:
    the fork goes ahead with the section unfinished and the child sees it.
    """
    script = textwrap.dedent(
        """
        import os, threading, time
        import tl_runtime  # registers tl_runtime's before-fork handler
        import logging  # registers a newer one, which runs first and takes logging's lock
        from tl_runtime import fork_safety
        fork_safety.WAIT_SECONDS = 10.0
        entered, finished = threading.Event(), threading.Event()

        def compile_like():
            with fork_safety.fork_waits_for_this():
                entered.set()
                time.sleep(0.5)
                logging.getLogger("made.while.compiling")  # takes logging's lock
                finished.set()

        thread = threading.Thread(target=compile_like)
        thread.start()
        entered.wait()
        pid = os.fork()
        if pid == 0:
            os._exit(0 if finished.is_set() else 4)
        _, status = os.waitpid(pid, 0)
        thread.join()
        print("CHILD", os.waitstatus_to_exitcode(status))
        """
    )
    proc = _python(script, tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "CHILD 0" in proc.stdout, proc.stdout + proc.stderr


def test_a_lock_held_by_another_thread_is_free_in_the_child(tmp_path: Path) -> None:
    """Deterministic: a set-up lock held by a thread at the fork is released in the child."""
    script = textwrap.dedent(
        """
        import os, threading, time
        from tl_runtime.fork_safety import ForkSafeLock
        lock, held, done = ForkSafeLock(), threading.Event(), threading.Event()

        def hold():
            with lock:
                held.set()
                done.wait()

        threading.Thread(target=hold).start()
        held.wait()
        pid = os.fork()
        if pid == 0:
            os._exit(0 if lock.acquire(timeout=10) else 7)
        _, status = os.waitpid(pid, 0)
        done.set()
        print("CHILD", os.waitstatus_to_exitcode(status))
        """
    )
    proc = _python(script, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "CHILD 0" in proc.stdout


def test_fork_waits_for_an_import_in_progress(tmp_path: Path) -> None:
    """Deterministic: a fork while another thread imports waits for the import to finish,
    so the child imports the module at once (before: it waited forever on its lock)."""
    (tmp_path / "slow_module.py").write_text("import time\ntime.sleep(1.0)\nVALUE = 42\n")
    script = textwrap.dedent(
        f"""
        import os, sys, threading, time
        sys.path.insert(0, {str(tmp_path)!r})
        import tl_runtime  # installs the before-fork wait
        from tl_runtime.fork_safety import imports_in_progress
        thread = threading.Thread(target=lambda: __import__("slow_module"))
        thread.start()
        time.sleep(0.3)
        assert "slow_module" in imports_in_progress(), imports_in_progress()
        pid = os.fork()
        if pid == 0:
            import faulthandler
            faulthandler.dump_traceback_later(20, exit=True)
            import slow_module
            os._exit(0 if slow_module.VALUE == 42 else 5)
        _, status = os.waitpid(pid, 0)
        thread.join()
        print("CHILD", os.waitstatus_to_exitcode(status))
        """
    )
    proc = _python(script, tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "CHILD 0" in proc.stdout, proc.stderr


def test_a_call_resolving_its_checked_path_counts_as_in_flight() -> None:
    """The first torch call of a kernel on tvm_ffi resolves its checked path inside
    `fast_path` and calls tvm-ffi from that frame; exit did not see it as a call in
    flight, so a daemon thread returning from it aborted the process (about 1 run in 6
    with eager specializations compiled and called from daemon threads)."""
    import types

    from tl_runtime.adapters import fast_path, tvm_ffi_adapter

    frames: list[Any] = []

    def record_caller(_args: tuple[Any, ...]) -> None:
        frames.append(sys._getframe(1))  # the frame that calls into the launch

    checker: Any = types.SimpleNamespace(_np=None, plan=types.SimpleNamespace(host_arrays=True))
    call = fast_path.build_fast_path(checker, record_caller, record_caller, lambda: record_caller)
    call(object())  # no numpy: the checked path is resolved, then called, from fast_path
    assert frames and frames[-1].f_code.co_filename == fast_path.__file__
    assert tvm_ffi_adapter._in_tvm_ffi_call(frames[-1])
