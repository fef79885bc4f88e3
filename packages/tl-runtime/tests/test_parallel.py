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


def test_pthreads_helper_runs_parallel_kernels(
    artifact: Artifact, warm_runtime_cache: Path
) -> None:
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
        "TL_RUNTIME_CACHE_DIR": str(warm_runtime_cache),
        "PYTHONPATH": SRC,
    }
    proc = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "THREADS 3" in proc.stdout


FORK_SCRIPT = """
import multiprocessing as mp, sys
import numpy as np, tl_runtime

kernel = tl_runtime.load({path!r}, adapter={adapter!r})
a = np.arange(65536, dtype=np.float32)
tl_runtime.set_num_threads(2)
assert (kernel(a, a) == 2 * a).all()  # the parent runs a parallel region first

def child(queue):
    out = kernel(a, a)  # before the fix: waits forever for the parent's worker threads
    queue.put(bool((out == 2 * a).all()))

ctx = mp.get_context("fork")
queue = ctx.Queue()
proc = ctx.Process(target=child, args=(queue,))
proc.start()
proc.join(60)
if proc.is_alive():
    proc.kill()
    sys.exit("the forked child hung on its first parallel kernel")
print("CHILD", proc.exitcode, queue.get(timeout=5))
assert (kernel(a, a) == 2 * a).all()  # the parent still runs after the fork
"""


@pytest.mark.parametrize("no_openmp", [False, True], ids=["openmp", "pthreads"])
def test_forked_child_runs_parallel_kernels(
    artifact: Artifact, adapter: str, warm_runtime_cache: Path, no_openmp: bool
) -> None:
    """A child forked after the parent ran a parallel kernel runs parallel kernels too."""
    script = FORK_SCRIPT.format(path=str(artifact("padd", out_idx=(2,))), adapter=adapter)
    env = {**os.environ, "TL_RUNTIME_CACHE_DIR": str(warm_runtime_cache), "PYTHONPATH": SRC}
    env.pop("TL_RUNTIME_NO_OPENMP", None)
    if no_openmp:
        env["TL_RUNTIME_NO_OPENMP"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "CHILD 0 True" in proc.stdout


def test_damaged_helper_is_rebuilt(tmp_path: Path) -> None:
    """A truncated context helper in the cache is detected and rebuilt, not loaded."""
    script = (
        "from tl_runtime import context; s = context.ensure_context_symbols(); "
        "print(s.parallel, s.helper_path)"
    )
    env = {**os.environ, "TL_RUNTIME_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": SRC}
    env.pop("TL_RUNTIME_NO_OPENMP", None)

    def run() -> tuple[bool, Path]:
        proc = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
        parallel, path = proc.stdout.split()
        return parallel == "True", Path(path)

    parallel, helper = run()
    assert parallel and helper.stat().st_mode & 0o777 == 0o600
    intact = helper.read_bytes()
    helper.write_bytes(intact[: len(intact) // 3])  # truncated in place
    parallel, again = run()
    assert parallel and again == helper and helper.read_bytes() == intact
    helper.unlink()
    helper.write_bytes(b"\x7fELF garbage")  # replaced, record left as it was
    assert run()[0] and helper.read_bytes() == intact


def test_insecure_helper_cache_is_refused(tmp_path: Path) -> None:
    """A helper cache other users can write is refused: no helper is loaded from it."""
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(0o777)
    script = (
        "from tl_runtime import context; s = context.ensure_context_symbols(); "
        "print(s.parallel, '|', s.reason)"
    )
    env = {**os.environ, "TL_RUNTIME_CACHE_DIR": str(cache), "PYTHONPATH": SRC}
    proc = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("False |") and "writable by other users" in proc.stdout
    assert not list(cache.iterdir())


def test_bad_launcher_variable_is_named(artifact: Artifact, tmp_path: Path) -> None:
    bogus = tmp_path / "launcher.so"
    bogus.write_bytes(b"not a library")
    for value in (str(bogus), str(tmp_path / "missing.so")):
        script = textwrap.dedent(
            f"""
            import tl_runtime
            try:
                tl_runtime.load({str(artifact("vadd_n", out_idx=(2,)))!r}, adapter="cython")
            except Exception as exc:
                print(type(exc).__name__, exc)
            """
        )
        env = {**os.environ, "TL_RUNTIME_LAUNCHER": value, "PYTHONPATH": SRC}
        proc = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
        assert "AdapterUnavailableError TL_RUNTIME_LAUNCHER=" in proc.stdout, proc.stdout
        assert value in proc.stdout


def test_a_launcher_built_from_other_sources_is_refused_by_name(tmp_path: Path) -> None:
    """``$TL_RUNTIME_LAUNCHER`` naming a launcher of another tl-runtime (its ``Launcher`` takes
    other arguments) is refused when loaded, naming the variable and both source digests,
    instead of failing with a TypeError at the first call."""
    from tl_runtime.adapters.cython_adapter import _import_prebuilt, launcher_extension
    from tl_runtime.errors import AdapterUnavailableError
    from tl_runtime.launcher_sources import launcher_source_digest, read_launcher_source

    current = launcher_source_digest(read_launcher_source())
    assert current == launcher_extension().SOURCE_DIGEST  # the build stamps what it built
    old = tmp_path / "old_launcher.py"  # an importable stand-in for another build
    old.write_text(f"class Launcher: pass\nSOURCE_DIGEST = {'0' * 64!r}\n")
    with pytest.raises(AdapterUnavailableError, match="built from other launcher sources") as info:
        _import_prebuilt(old)
    assert "TL_RUNTIME_LAUNCHER=" in str(info.value) and current in str(info.value)
    same = tmp_path / "same_launcher.py"
    same.write_text(f"class Launcher: pass\nSOURCE_DIGEST = {current!r}\n")
    assert current == _import_prebuilt(same).SOURCE_DIGEST
