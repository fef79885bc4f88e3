"""What the CPU benchmarks share: a clean environment, the BLAS report, best-of timing.

Imported by the benchmark scripts in this folder (run as
``python benchmarks/<name>.py``, so this folder is on ``sys.path``).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

_REEXEC_FLAG = "TL_BENCH_REEXECED"


def reexec_with_bench_env(*, native_openblas: bool = True) -> None:
    """Re-run this script once in the benchmark environment, unless already there.

    ``native_openblas`` removes OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (this
    machine's default pins OpenBLAS to an older kernel), so numpy runs its
    native kernel. TVM's thread pool is sized to the cores, idle OpenMP
    workers sleep instead of spinning on the cores numpy needs next, and idle
    OpenBLAS workers likewise sleep instead of spinning on the kernel's cores.
    """
    if os.environ.get(_REEXEC_FLAG):
        return
    env = dict(os.environ)
    if native_openblas:
        env.pop("OPENBLAS_CORETYPE", None)
        env.pop("OPENBLAS_L2_SIZE", None)
    env.setdefault("TVM_NUM_THREADS", str(os.cpu_count() or 1))
    env.setdefault("OMP_WAIT_POLICY", "passive")
    # The same courtesy from numpy's side: OpenBLAS workers otherwise spin about 2**28
    # cycles (a tenth of a second) after each call, on the cores the kernel timed next
    # needs; 4 (2**4 cycles) is OpenBLAS's smallest timeout.
    env.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
    env[_REEXEC_FLAG] = "1"
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


def openblas_description() -> str:
    """Which OpenBLAS kernel numpy runs (threadpoolctl), one line."""
    try:
        import threadpoolctl
    except ImportError:
        return "unknown (threadpoolctl not installed)"
    infos = [i for i in threadpoolctl.threadpool_info() if i.get("internal_api") == "openblas"]
    if not infos:
        return "no OpenBLAS found"
    info = infos[0]
    return (
        f"OpenBLAS {info.get('version')} core={info.get('architecture')} "
        f"threads={info.get('num_threads')}"
    )


def best_seconds(call: Callable[[], Any], rounds: int, reps: int, pause: float = 0.05) -> float:
    """The best per-call time over ``rounds`` rounds of ``reps`` calls of ``call()``."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(reps):
            call()
        best = min(best, (time.perf_counter() - start) / reps)
        time.sleep(pause)
    return best
