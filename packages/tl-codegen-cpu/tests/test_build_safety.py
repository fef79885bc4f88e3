"""A kernel calling a function that does not exist fails its build; killed builds leave no scratch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tl_ir.language as T
from tl_backend_api import ToolchainError, build_artifact, create_backend_context
from tl_codegen_cpu.scratch import (
    LOCK_NAME,
    SCRATCH_PREFIX,
    scratch_directory,
    sweep_stale_scratch_directories,
)

MISSING = "tl_test_function_that_does_not_exist"


def calls_missing_function() -> object:
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):  # type: ignore[no-untyped-def]
        with T.Kernel(4, threads=1) as bx:
            for i in T.Parallel(16):
                B[bx * 16 + i] = T.call_extern("float32", MISSING, A[bx * 16 + i])

    return main


def calls_libm() -> object:
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):  # type: ignore[no-untyped-def]
        with T.Kernel(4, threads=1) as bx:
            for i in T.Parallel(16):
                B[bx * 16 + i] = T.call_extern("float32", "cbrtf", A[bx * 16 + i])

    return main


@pytest.mark.parametrize("kind", ["c", "llvm"])
def test_call_extern_of_a_missing_function_fails_the_build_naming_it(
    kind: str, tmp_path: Path
) -> None:
    with pytest.raises(ToolchainError, match=rf"calls {MISSING}, which nothing defines"):
        build_artifact(create_backend_context(kind), calls_missing_function(), tmp_path / "a")


@pytest.mark.parametrize("kind", ["c", "llvm"])
def test_call_extern_of_a_system_library_function_still_builds_and_runs(
    kind: str, tmp_path: Path
) -> None:
    import numpy as np

    import tl_runtime

    artifact = build_artifact(create_backend_context(kind), calls_libm(), tmp_path / "a", out_idx=1)
    a = np.arange(64, dtype=np.float32)
    np.testing.assert_allclose(tl_runtime.load(artifact)(a), np.cbrt(a), rtol=1e-6)


def _make_scratch(parent: Path, name: str, age_seconds: float) -> Path:
    path = parent / f"{SCRATCH_PREFIX}{name}"
    path.mkdir()
    (path / "kernel.c").write_text("int x;\n")
    then = time.time() - age_seconds
    os.utime(path, (then, then))
    return path


def test_sweep_removes_only_old_unowned_scratch_directories(tmp_path: Path) -> None:
    stale = _make_scratch(tmp_path, "stale", age_seconds=3600)
    young = _make_scratch(tmp_path, "young", age_seconds=0)
    other = tmp_path / "not-a-build-dir"
    other.mkdir()
    os.utime(other, (0, 0))
    assert sweep_stale_scratch_directories(tmp_path) == [stale]
    assert not stale.exists() and young.exists() and other.exists()


def test_a_killed_builds_scratch_directory_is_swept_but_a_live_one_is_not(tmp_path: Path) -> None:
    owned = _make_scratch(tmp_path, "owned", age_seconds=3600)
    # A separate process holds the directory's lock, as a build does, until it is killed.
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from filelock import FileLock; "
            f"lock = FileLock({str(owned / LOCK_NAME)!r}); lock.acquire(); "
            "print('locked', flush=True); time.sleep(120)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        os.utime(owned, (time.time() - 3600, time.time() - 3600))  # taking the lock touched it
        assert sweep_stale_scratch_directories(tmp_path) == []
        assert owned.exists()
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        assert sweep_stale_scratch_directories(tmp_path) == [owned]
        assert not owned.exists()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=30)


def test_scratch_directory_is_removed_after_use_even_on_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    with pytest.raises(RuntimeError, match="boom"), scratch_directory() as path:
        assert path.parent == tmp_path and (path / LOCK_NAME).exists()
        raise RuntimeError("boom")
    assert not path.exists()
