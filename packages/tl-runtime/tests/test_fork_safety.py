"""The fork wait's audit hook: added by the first compile section, silent on kernel calls.

`tl_runtime.fork_safety` waits for other threads' compiles on Python's ``os.fork`` audit
event; an audit hook is called on every audited event of the process, so a kernel call
must raise none (the hook would tax every call). Each case runs in a fresh process: an
audit hook cannot be removed from the test process.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

Artifact = Callable[..., Path]


def _run(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )


def test_kernel_calls_raise_no_audit_event(artifact: Artifact) -> None:
    directory = artifact("vadd_n", out_idx=(2,))
    script = textwrap.dedent(
        f"""
        import sys, collections
        import numpy as np, tl_runtime
        kernels = [tl_runtime.load({str(directory)!r}, adapter=key) for key in ("cython", "tvm_ffi")]
        # 64-byte aligned, as the kernel declares (a misaligned input takes the copying
        # path, whose refusal inside tvm-ffi builds a traceback); numpy only (torch's
        # import alone takes seconds)
        raw = np.ones(1024 + 16, np.float32)
        start = (-raw.ctypes.data % 64) // 4
        arrays = [raw[start : start + 1024]]
        for kernel in kernels:
            for x in arrays:
                kernel(x, x)  # first calls set up whatever they need
        events = collections.Counter()
        sys.addaudithook(lambda event, args: events.update([event]))
        for _ in range(100):
            for kernel in kernels:
                for x in arrays:
                    kernel(x, x)
        print("EVENTS", dict(events))
        """
    )
    proc = _run(script)
    assert proc.returncode == 0, proc.stderr
    assert "EVENTS {}" in proc.stdout, proc.stdout


def test_the_first_section_adds_the_audit_hook_and_a_fork_waits_on_it() -> None:
    script = textwrap.dedent(
        """
        import os, threading, time
        from tl_runtime import fork_safety
        assert not fork_safety._audit_hook_added  # importing adds no hook
        entered, finished = threading.Event(), threading.Event()

        def section():
            with fork_safety.fork_waits_for_this():
                entered.set()
                time.sleep(0.3)
                finished.set()

        thread = threading.Thread(target=section)
        thread.start()
        entered.wait()
        assert fork_safety._audit_hook_added
        pid = os.fork()
        if pid == 0:
            os._exit(0 if finished.is_set() else 4)
        _, status = os.waitpid(pid, 0)
        thread.join()
        print("CHILD", os.waitstatus_to_exitcode(status))
        """
    )
    proc = _run(script)
    assert proc.returncode == 0, proc.stderr
    assert "CHILD 0" in proc.stdout, proc.stdout + proc.stderr


def test_a_fork_refused_by_a_later_audit_hook_leaves_no_section_waiting() -> None:
    # The audit hook closes the gate for the announced fork; a later hook refusing the
    # fork means no after-fork handler ever opened it, and every later compile section
    # (in this thread or another) waited WAIT_SECONDS (300 s) for it.
    script = textwrap.dedent(
        """
        import os, sys, threading, time
        from tl_runtime import fork_safety
        fork_safety.WAIT_SECONDS = 20.0
        with fork_safety.fork_waits_for_this():
            pass  # adds the audit hook

        def refuse(event, args):
            if event == "os.fork":
                raise PermissionError("fork refused by policy")

        sys.addaudithook(refuse)
        try:
            os.fork()
        except PermissionError:
            pass
        started = time.monotonic()
        with fork_safety.fork_waits_for_this():
            pass
        other = threading.Thread(target=lambda: fork_safety.fork_waits_for_this().__enter__())
        other.start()
        other.join()
        print("WAITED", round(time.monotonic() - started, 1))
        """
    )
    proc = _run(script)
    assert proc.returncode == 0, proc.stderr
    assert "WAITED 0.0" in proc.stdout, proc.stdout + proc.stderr
