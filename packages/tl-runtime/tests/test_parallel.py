"""Multi-core kernels under tvm-ffi alone: the context-symbol helper and its fallback."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import tl_runtime
from tl_runtime import context

Artifact = Callable[..., Path]
SRC = str(Path(tl_runtime.__file__).resolve().parent.parent)


def test_parallel_kernel_is_correct_and_uses_several_threads(
    artifact: Artifact, adapter: str
) -> None:
    kernel = tl_runtime.load(artifact("padd", out_idx=(2,)), adapter=adapter)
    status = context.ensure_context_symbols()
    assert status.parallel and status.helper_path is not None and status.helper_path.exists()
    a = np.random.default_rng(0).random(65536, dtype=np.float32)
    b = np.random.default_rng(1).random(65536, dtype=np.float32)
    try:
        tl_runtime.set_num_threads(2)
        np.testing.assert_allclose(kernel(a, b), a + b)
        assert context.last_launch_threads() == 2
        tl_runtime.set_num_threads(1)
        np.testing.assert_allclose(kernel(a, b), a + b)
        assert context.last_launch_threads() == 1
    finally:
        tl_runtime.set_num_threads(0)
    if (os.cpu_count() or 1) >= 2:
        kernel(a, b)
        assert context.last_launch_threads() >= 2


def test_set_num_threads_validates() -> None:
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="expected an int >= 0"):
            tl_runtime.set_num_threads(bad)  # type: ignore[arg-type]


def test_helper_is_cached_per_user(tmp_path: Path) -> None:
    """A fresh cache dir gets a private directory and one helper; a second process reuses it."""
    script = "from tl_runtime import context; print(context.ensure_context_symbols().helper_path)"
    env = {**os.environ, "TL_RUNTIME_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": SRC}
    first = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    second = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert first.stdout == second.stdout and str(tmp_path) in first.stdout
    assert (tmp_path / "cache").stat().st_mode & 0o777 == 0o700


def test_without_a_compiler_serial_runs_and_parallel_fails_clearly(
    artifact: Artifact, tmp_path: Path
) -> None:
    serial, parallel = artifact("vadd_n", out_idx=(2,)), artifact("padd", out_idx=(2,))
    script = textwrap.dedent(
        f"""
        import numpy as np, tl_runtime
        from tl_runtime import context
        x = np.arange(8, dtype=np.float32)
        assert (tl_runtime.load({str(serial)!r})(x, x) == 2 * x).all()
        status = context.ensure_context_symbols()
        assert not status.parallel and "C compiler" in status.reason, status
        k = tl_runtime.load({str(parallel)!r})
        a = np.zeros(65536, np.float32)
        try:
            k(a, a)
        except RuntimeError as exc:
            print("REFUSED:", exc)
        # the cython launcher (prebuilt, given by path) reports the kernel's error the same way
        kc = tl_runtime.load({str(parallel)!r}, adapter="cython")
        try:
            kc(a, a)
        except RuntimeError as exc:
            print("CYTHON REFUSED:", exc)
        """
    )
    from tl_runtime.adapters.cython_adapter import launcher_extension

    prebuilt = str(launcher_extension().__file__)
    env = {
        **os.environ,
        "TL_RUNTIME_CC": "/nonexistent/cc",
        "TL_RUNTIME_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": SRC,
        "TL_RUNTIME_LAUNCHER": prebuilt,
    }
    proc = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "REFUSED:" in proc.stdout and "needs the tl-runtime C helper" in proc.stdout
    assert "CYTHON REFUSED:" in proc.stdout


def test_pthreads_helper_runs_parallel_kernels(artifact: Artifact, tmp_path: Path) -> None:
    parallel = artifact("padd", out_idx=(2,))
    script = textwrap.dedent(
        f"""
        import numpy as np, tl_runtime
        from tl_runtime import context
        k = tl_runtime.load({str(parallel)!r})
        status = context.ensure_context_symbols()
        assert status.parallel and not status.openmp, status
        a = np.arange(65536, dtype=np.float32)
        tl_runtime.set_num_threads(3)
        assert (k(a, a) == 2 * a).all()
        print("THREADS", context.last_launch_threads())
        """
    )
    env = {
        **os.environ,
        "TL_RUNTIME_NO_OPENMP": "1",
        "TL_RUNTIME_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": SRC,
    }
    proc = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "THREADS 3" in proc.stdout
