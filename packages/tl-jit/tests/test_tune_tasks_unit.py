"""Shipped artifacts are verified before use; executors given to autotune and par_compile
are checked; tuning results are listed and cleared (``tl cache tuning``)."""

from __future__ import annotations

import concurrent.futures
from pathlib import Path
from typing import Any

import pytest

import tl_jit
from tl_jit.errors import AutotuneError
from tl_jit.tune_tasks import ShippedArtifact, install_artifact


def _shipped(fake_backend: Any) -> ShippedArtifact:
    kernel = tl_jit.compile(fake_backend.vadd_n, out_idx=-1, target="llvm")
    return ShippedArtifact.pack(kernel.artifact_dir, kernel.cache_key)


def test_a_shipped_artifact_installs_into_the_local_cache(
    fake_backend: Any, cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import numpy as np

    shipped = _shipped(fake_backend)
    # Another machine's cache: the entry is not there yet.
    monkeypatch.setenv("TL_CACHE_DIR", str(tmp_path / "other"))
    kernel = install_artifact(shipped)
    assert shipped.ir_key is not None and kernel.cache_key == shipped.ir_key
    assert (tmp_path / "other" / "kernels" / shipped.ir_key / "manifest.json").is_file()
    a = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(kernel(a, a), 2 * a)


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        ("flip a byte", "failed verification"),
        ("add a file", "files not in its manifest"),
        ("escape", "leaves the artifact"),
        ("another key", "records tl_jit.cache_key"),
    ],
)
def test_a_tampered_shipped_artifact_is_refused(
    fake_backend: Any, cache_dir: Path, tamper: str, message: str
) -> None:
    shipped = _shipped(fake_backend)
    files = dict(shipped.files)
    key = shipped.ir_key
    if tamper == "flip a byte":
        library = next(name for name in files if name.endswith(".so"))
        data = bytearray(files[library])
        data[len(data) // 2] ^= 0xFF
        files[library] = bytes(data)
    elif tamper == "add a file":
        files["extra.so"] = b"\x7fELF"
    elif tamper == "escape":
        files["../outside"] = b"x"
    else:
        key = "0" * 64
    with pytest.raises(AutotuneError, match=message):
        install_artifact(ShippedArtifact(files=files, ir_key=key, name=shipped.name))


def test_executors_are_checked(fake_backend: Any, cache_dir: Path) -> None:
    with pytest.raises(TypeError, match="autotune executor: expected an object with submit"):
        tl_jit.autotune(configs=[{}], executor=object())
    with pytest.raises(ValueError, match="autotune timeout"):
        tl_jit.autotune(configs=[{}], timeout=0)
    with (
        concurrent.futures.ProcessPoolExecutor(1) as pool,
        pytest.raises(TypeError, match="a PrimFunc cannot be sent there"),
    ):
        tl_jit.par_compile([fake_backend.vadd_n], executor=pool, target="llvm")
    with concurrent.futures.ThreadPoolExecutor(2) as threads:
        kernels = tl_jit.par_compile(
            [fake_backend.vadd_n, fake_backend.vadd], executor=threads, target="llvm"
        )
    assert [k.name for k in kernels if k is not None] == ["vadd_n", "vadd"]


def test_a_local_function_cannot_go_to_an_executor(fake_backend: Any, cache_dir: Path) -> None:
    @tl_jit.jit(out_idx=-1, target="llvm")
    def scale(n: int, repeat: int = 1) -> Any:
        return fake_backend.make_scale(n, 2.0, repeat)

    with concurrent.futures.ThreadPoolExecutor(1) as threads:
        tuned = tl_jit.autotune(configs=[{"repeat": 1}], executor=threads)(scale)
        with pytest.raises(TypeError, match="defined inside a function"):
            tuned(64)


def test_tuning_results_are_stored_listed_and_cleared(
    fake_backend: Any, cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import tljit_scale_kernel as module

    from tl_jit import cli, tune_records

    tuned = tl_jit.autotune(
        configs=[{"repeat": 1}, {"repeat": 1, "fail": True}],
        warmup=1,
        rep=2,
        ref_prog=module.reference,
        max_workers=1,
    )(module.scale)
    with pytest.warns(tl_jit.AutotuneWarning):
        best = tuned(256, 2.0)
    (record,) = tune_records.list_records()
    assert record.best_config == {"repeat": 1} and record.function == "scale"
    assert record.configurations == 2 and record.failures == 1
    saved = tune_records.load(record.key)
    assert saved is not None
    assert saved["machine"]["cores"] and saved["versions"]
    assert saved["latency"] == pytest.approx(best.latency)
    assert cli.main(["cache", "tuning"]) == 0
    out = capsys.readouterr().out
    assert record.key[:16] in out and "best={'repeat': 1}" in out
    assert cli.main(["cache", "clear-tuning"]) == 0
    assert "removed 1 tuning results" in capsys.readouterr().out
    assert tune_records.list_records() == []
    # Kernels stay: only the results were cleared.
    assert any((cache_dir / "kernels").iterdir())


def test_a_task_run_in_this_thread_leaves_no_worker_mark(
    fake_backend: Any, cache_dir: Path
) -> None:
    import tljit_scale_kernel as module

    from tl_jit import tune_tasks

    reference = tune_tasks.function_reference(module.scale)
    assert reference is not None
    shipped = tune_tasks.compile_config_task(reference, {"n": 64, "factor": 2.0})
    assert shipped.ir_key is not None
    # Only the import of the function counts as "inside a worker": a thread executor
    # running tasks here must not make later searches compile in this process.
    assert not tune_tasks.in_worker()


def test_a_tuning_result_edited_or_copied_is_not_trusted(
    fake_backend: Any, cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json
    import shutil
    import warnings

    import tljit_scale_kernel as module

    from tl_jit import tune_records
    from tl_jit.cache import CacheWarning
    from tl_jit.tune_timing import RecordedTimings

    timer = RecordedTimings.of([({"repeat": 3000}, 2.0), ({"repeat": 1}, 1.0)])

    def search() -> Any:
        return tl_jit.autotune(
            configs=[{"repeat": 3000}, {"repeat": 1}], max_workers=1, timer=timer
        )(module.scale)(256, 2.0)

    assert search().config == {"repeat": 1}
    (record,) = tune_records.list_records()
    assert json.loads(record.path.read_text())["proof"]
    # A signed record is reused quietly.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert search().config == {"repeat": 1}
    # Edited to name another winner: ignored, and the search runs again (and re-signs).
    data = json.loads(record.path.read_text())
    data["best_config"] = {"repeat": 3000}
    record.path.write_text(json.dumps(data))
    with pytest.warns(CacheWarning, match="tuning result .* does not prove"):
        assert search().config == {"repeat": 1}
    assert tune_records.load(record.key) is not None
    # Copied from another cache root (whose secret differs): ignored there.
    other = tmp_path / "other-cache"
    monkeypatch.setenv("TL_CACHE_DIR", str(other))
    assert search().config == {"repeat": 1}
    shutil.copy(record.path, other / "autotune" / record.path.name)
    with pytest.warns(CacheWarning, match="does not prove"):
        assert tune_records.load(record.key) is None


def test_stopping_a_pool_kills_its_workers_and_waits_a_bounded_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A busy worker (a build that never ends) is killed, and a pool whose own join does
    not return (pebble's manager threads waiting on a lock a killed worker held) holds the
    caller at most JOIN_SECONDS."""
    import threading
    import time

    from tljit_scale_kernel import sleep_then_return

    from tl_jit import tune_executor

    pool = tune_executor.local_process_pool(1)
    busy = pool.submit(sleep_then_return, 3600.0)
    deadline = time.monotonic() + 120
    while not busy.running() and time.monotonic() < deadline:
        time.sleep(0.05)
    workers = pool._workers()
    assert len(workers) == 1 and workers[0].is_alive()
    monkeypatch.setattr(tune_executor, "JOIN_SECONDS", 0.5)
    never = threading.Event()
    monkeypatch.setattr(pool._pool, "join", lambda *_: never.wait())
    stopping = threading.Thread(target=tune_executor.stop_pool, args=(pool,), daemon=True)
    stopping.start()
    stopping.join(10)
    assert not stopping.is_alive(), "stopping the pool waited for its join"
    workers[0].join(10)
    assert not workers[0].is_alive()


def test_a_worker_ends_with_the_process_that_made_its_pool(tmp_path: Path) -> None:
    """The search's process killed outright (no clean-up runs): its busy worker, orphaned
    in a build that never ends, ends too instead of sleeping on for the hour."""
    import os
    import signal
    import subprocess
    import sys
    import textwrap
    import time

    tests = Path(__file__).resolve().parent
    script = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(tests)!r})
        from tl_jit import tune_executor
        from tljit_scale_kernel import sleep_then_return

        if __name__ == "__main__":
            pool = tune_executor.local_process_pool(1)
            busy = pool.submit(sleep_then_return, 3600.0)
            while not busy.running():
                time.sleep(0.05)
            print(pool._workers()[0].pid, flush=True)
            time.sleep(3600)
        """
    )
    (tmp_path / "search.py").write_text(script)
    search = subprocess.Popen(
        [sys.executable, str(tmp_path / "search.py")],
        stdout=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        start_new_session=True,
    )
    try:
        assert search.stdout is not None
        worker = int(search.stdout.readline())
        search.send_signal(signal.SIGKILL)
        search.wait(timeout=30)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                os.kill(worker, 0)
            except ProcessLookupError:
                break
            with open(f"/proc/{worker}/stat") as handle:
                if handle.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
            time.sleep(0.1)
        else:
            raise AssertionError(f"worker {worker} outlived the search's process")
    finally:  # whatever is left of its session
        subprocess.run(["pkill", "-KILL", "-s", str(search.pid)], check=False)


def test_a_failure_whose_first_line_introduces_the_reason_keeps_it() -> None:
    """A failed check says why (the shapes), not only that the output differs."""
    from tl_jit.tune_executor import describe_failure

    error = AssertionError(
        "kernel 'main' output 0 differs from ref_fn: \n(shapes (2048,), (2047,) mismatch)\n"
        " x: array([1., 2., ...])"
    )
    assert describe_failure(error) == (
        "AssertionError: kernel 'main' output 0 differs from ref_fn: "
        "(shapes (2048,), (2047,) mismatch)"
    )
    assert describe_failure(ValueError("no configuration builds for block 0\ntrace")) == (
        "ValueError: no configuration builds for block 0"
    )
    assert describe_failure(RuntimeError()) == "RuntimeError"


def test_timing_scratch_of_dead_workers_is_removed() -> None:
    """A timing worker killed inside its task leaves its scratch folder; the next task
    removes it, and never a live worker's or a folder that is not a worker's."""
    import os
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    from tl_jit import tune_tasks

    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead_pid = int(gone.stdout)
    root = Path(tempfile.gettempdir())
    dead = Path(tempfile.mkdtemp(prefix=f"tl-timing-{dead_pid}-", dir=root))
    (dead / "artifact").mkdir()
    live = Path(tempfile.mkdtemp(prefix=f"tl-timing-{os.getppid()}-", dir=root))
    other = Path(tempfile.mkdtemp(prefix="tl-timing-notapid-", dir=root))
    try:
        tune_tasks._remove_dead_workers_scratch()
        assert not dead.exists()
        assert live.exists() and other.exists()
    finally:
        for folder in (dead, live, other):
            if folder.exists():
                folder.rmdir()


def _exits(item: int) -> int:
    if item == 1:
        raise SystemExit(0)  # a builder calling sys.exit(0)
    return item


def test_a_tasks_own_system_exit_fails_that_task_alone() -> None:
    """A task's SystemExit (or KeyboardInterrupt), handed back by its future, is its own
    failure; it ended the whole search (for sys.exit(0), the caller's process, silently)."""
    from tl_jit.parallel import run_parallel
    from tl_jit.tune_executor import TaskFailure, run_tasks

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = run_tasks(
            pool, _exits, [(0,), (1,), (2,)], stage="compile", timeout_s=None, in_flight=2
        )
    assert results[0] == 0 and results[2] == 2
    assert isinstance(results[1], TaskFailure)
    assert results[1].reason == "SystemExit: the task called sys.exit(0)"
    with pytest.warns(UserWarning, match="config 1: compile failed: SystemExit"):
        kernels = run_parallel(_exits, [0, 1, 2], 2, ignore_error=True, label="f")
    assert kernels == [0, None, 2]
    with pytest.raises(SystemExit):  # without ignore_error, the first error is raised
        run_parallel(_exits, [0, 1, 2], 2, ignore_error=False, label="f")
