"""Ctrl-C at any moment of a kernel's first call: ``KeyboardInterrupt`` comes out, and the
next call compiles and returns the right answer (issue 24, "signals at every moment of a
compile"; tl_runtime.interrupts).

Each case runs in its own process with a timeout. The interrupt is a real SIGINT, raised
at a chosen point: when a given module begins to import, or at the N-th Python function
call of a compile (a profile hook counts them), for N spread over the whole compile.
Before: an interrupt inside one of tvm's callbacks into Python came out as a bare
``RuntimeError`` or as "TVM's C code generation failed" (an autotuning search took it for
a failed configuration and went on), and one during the first call's import of torch,
ml_dtypes or tvm broke every later call of the process ("partially initialized module",
"already registered").
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent

KERNEL = textwrap.dedent(
    """
    import tl_jit
    import tl_jit.language as T


    @tl_jit.jit(target="c")
    def scale(A, factor: float = 2.0):
        N = T.const("N")
        A: T.Tensor[[N], T.float32]
        B = T.empty((N,), T.float32)
        with T.Kernel(T.ceildiv(N, 64), threads=64) as bx:
            for i in T.Parallel(64):
                if bx * 64 + i < N:
                    B[bx * 64 + i] = A[bx * 64 + i] * factor
        return B
    """
)


def _python(script: str, tmp_path: Path, timeout: float = 300) -> str:
    (tmp_path / "interrupted_kernel.py").write_text(KERNEL)
    env = {**os.environ, "TL_CACHE_DIR": str(tmp_path / "cache")}
    for name in ("TL_DISABLE_CACHE", "TL_DEBUG", "TL_INTERPRET"):
        env.pop(name, None)
    # The handler a terminal's Python has: a runner started in the background (``&``,
    # nohup) passes SIGINT on ignored, and Python then installs none.
    default_sigint = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    done = subprocess.run(
        [sys.executable, "-c", default_sigint + textwrap.dedent(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return done.stdout


CALL_UNTIL_DONE = """
    def call_until_done(factor):
        '''Calls until one call returns; every failure on the way must be the interrupt.'''
        interrupts = 0
        while True:
            try:
                result = interrupted_kernel.scale(a, factor)
            except KeyboardInterrupt:
                interrupts += 1
                assert interrupts < 50, "interrupted forever"
                continue
            assert np.array_equal(result, a * np.float32(factor)), result[:4]
            return interrupts
"""


def test_an_interrupt_while_the_first_call_imports_leaves_the_process_usable(
    tmp_path: Path,
) -> None:
    """SIGINT as each of several modules begins to import, inside the heavy packages a
    first call loads (torch through tvm_ffi where torch is installed, tvm's runtime, the
    kernel language, the CPU backend): each gives ``KeyboardInterrupt``, the next call
    goes on from there, and the kernel finally runs."""
    script = f"""
    import importlib.abc, importlib.util, signal, sys
    sys.path.insert(0, ".")
    import numpy as np
    import interrupted_kernel

    TRIGGERS = ["torch.nested", "ml_dtypes", "tvm.runtime", "tvm.tirx",
                "tl_ir.language", "tl_passes", "tl_codegen_cpu"]
    if importlib.util.find_spec("torch") is None:
        TRIGGERS.remove("torch.nested")
    fired = []

    class Interrupting(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path, target=None):
            if fullname in TRIGGERS and fullname not in fired:
                fired.append(fullname)
                signal.raise_signal(signal.SIGINT)
            return None

    sys.meta_path.insert(0, Interrupting())
    a = np.arange(1000, dtype=np.float32)
    {CALL_UNTIL_DONE}
    interrupts = call_until_done(3.0)
    print("fired", sorted(fired))
    print("missing", sorted(set(TRIGGERS) - set(fired)))
    print("interrupts", interrupts)
    """
    out = _python(script, tmp_path)
    assert "missing []" in out, out
    assert "interrupts 0" not in out, out


def test_an_interrupt_at_any_moment_of_a_compile_leaves_the_process_usable(
    tmp_path: Path,
) -> None:
    """SIGINT at 40 points spread over a compile (the N-th Python call of it): each comes
    out as ``KeyboardInterrupt`` (or, where Python drops it, the call returns the right
    answer), the same call then builds the right kernel, and a new process loads every one
    of them from the disk cache with the right answer."""
    script = f"""
    import signal, sys
    sys.path.insert(0, ".")
    import numpy as np
    import interrupted_kernel

    a = np.arange(1000, dtype=np.float32)
    interrupted_kernel.scale(a, 1.0)  # the compiler stack is loaded
    {CALL_UNTIL_DONE}

    def interrupt_at(limit):
        count = [0]

        def profile(frame, event, arg):
            if event == "call":
                count[0] += 1
                if count[0] == limit:
                    sys.setprofile(None)
                    signal.raise_signal(signal.SIGINT)

        return count, profile

    count, profile = interrupt_at(-1)
    sys.setprofile(profile)
    interrupted_kernel.scale(a, 2.0)
    sys.setprofile(None)
    total = count[0]
    assert total > 1000, total
    POINTS = 40
    wrong = []
    finished = 0
    for k in range(POINTS):
        limit = 1 + (total - 1) * k // (POINTS - 1)
        factor = 10.0 + k
        _, profile = interrupt_at(limit)
        sys.setprofile(profile)
        try:
            result = interrupted_kernel.scale(a, factor)
            # Python drops an exception raised while a generator is being closed (the
            # signal landed there): the call goes on, and must be right.
            finished += 1
            if not np.array_equal(result, a * np.float32(factor)):
                wrong.append((limit, "finished with a wrong answer"))
        except KeyboardInterrupt:
            pass
        except BaseException as error:
            wrong.append((limit, type(error).__name__, str(error)[:300]))
        finally:
            sys.setprofile(None)
        assert call_until_done(factor) == 0
    assert finished <= 4, (finished, "of", POINTS, "calls were not interrupted")
    print("wrong", wrong)
    """
    out = _python(script, tmp_path)
    assert "wrong []" in out, out
    check = f"""
    import sys
    sys.path.insert(0, ".")
    import numpy as np
    import interrupted_kernel

    a = np.arange(1000, dtype=np.float32)
    {CALL_UNTIL_DONE}
    for k in range(40):
        call_until_done(10.0 + k)
    print("all right")
    """
    assert "all right" in _python(check, tmp_path)
