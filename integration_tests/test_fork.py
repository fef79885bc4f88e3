"""A child forked after its parent ran a parallel kernel runs parallel kernels too.

``multiprocessing``'s default start method on Linux forks; the OpenMP runtime's worker
threads do not exist in the child. Each case runs in its own process with a timeout, so a
hang fails the test instead of stalling the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

SCRIPT = textwrap.dedent(
    """
    import multiprocessing as mp, sys
    import numpy as np
    import tl_jit
    from kernels.elementwise_add import elementwise_add

    kernel = tl_jit.compile(elementwise_add(512, 512, 32, 32), out_idx=[-1], target={target!r})
    a = np.ones((512, 512), np.float32)
    assert (kernel(a, a) == 2).all()  # the parent runs a parallel region first

    def child(queue):
        queue.put(bool((kernel(a, a) == 2).all()))

    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=child, args=(queue,))
    proc.start()
    proc.join(60)
    if proc.is_alive():
        proc.kill()
        sys.exit("the forked child hung on its first parallel kernel")
    print("CHILD", proc.exitcode, queue.get(timeout=5))
    assert (kernel(a, a) == 2).all()
    """
)


@pytest.mark.parametrize(
    ("target", "no_openmp"),
    [
        pytest.param("c", False, id="c-openmp-helper"),
        pytest.param("llvm", True, id="llvm-pthreads-helper"),
        # Slow: the default run covers each target and each helper once (above); what a
        # forked child must cope with is the helper's thread team, not the target. The
        # adapters x helpers grid runs in packages/tl-runtime/tests/test_parallel.py.
        pytest.param("llvm", False, id="llvm-openmp-helper", marks=pytest.mark.slow),
        pytest.param("c", True, id="c-pthreads-helper", marks=pytest.mark.slow),
    ],
)
def test_forked_child_runs_parallel_kernels(
    tmp_path: Path, warm_runtime_cache: Path, target: str, no_openmp: bool
) -> None:
    env = {
        **os.environ,
        "TL_CACHE_DIR": str(tmp_path / "cache"),
        "TL_RUNTIME_CACHE_DIR": str(warm_runtime_cache),
        "PYTHONPATH": str(HERE),
    }
    env.pop("TL_DISABLE_CACHE", None)
    env.pop("TL_RUNTIME_NO_OPENMP", None)
    if no_openmp:
        env["TL_RUNTIME_NO_OPENMP"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(target=target)],
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "CHILD 0 True" in proc.stdout
