"""The CPU thread team's settings: the idle-wait default and the thread-count bound."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tl_runtime
from tl_runtime import thread_team
from tl_runtime.thread_team import decide_wait_policy, loaded_openmp_runtimes

SRC = str(Path(tl_runtime.__file__).resolve().parent.parent)
REPORT = (
    "import json, os, tl_runtime; p = tl_runtime.thread_policy(); "
    "print(json.dumps([os.environ.get('OMP_WAIT_POLICY'), p.chosen_by, p.effective]))"
)


def _child(script: str, **env_changes: str | None) -> list[object]:
    env = {**os.environ, "PYTHONPATH": SRC}
    for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
        env.pop(name, None)
    for name, value in env_changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    proc = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    result: list[object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_idle_workers_sleep_by_default() -> None:
    """Before the fix the OpenMP runtime got no wait policy: its workers spun when idle."""
    assert _child(REPORT) == ["PASSIVE", "tl_runtime", True]


def test_the_users_choice_is_kept() -> None:
    assert _child(REPORT, OMP_WAIT_POLICY="active") == ["active", "user", True]
    assert _child(REPORT, GOMP_SPINCOUNT="1000") == [None, "user", True]


def test_the_default_is_in_place_before_the_helper_loads_openmp(tmp_path: Path) -> None:
    """The helper (the llvm kernels' parallel team) loads the OpenMP runtime after the
    policy is in the environment, and so does `import tl_jit` (tvm loads libgomp)."""
    script = (
        "import json, os, sys; "
        "from tl_runtime import context; s = context.ensure_context_symbols(); "
        "import tl_runtime; p = tl_runtime.thread_policy(); "
        "print(json.dumps([os.environ.get('OMP_WAIT_POLICY'), p.effective, s.openmp]))"
    )
    result = _child(script, TL_RUNTIME_CACHE_DIR=str(tmp_path / "cache"))
    assert result[:2] == ["PASSIVE", True]
    jit = _child(
        "import tl_jit, tvm, json, os, tl_runtime; p = tl_runtime.thread_policy(); "
        "print(json.dumps([os.environ.get('OMP_WAIT_POLICY'), p.effective]))"
    )
    assert jit == ["PASSIVE", True]


def test_decision_logic() -> None:
    additions, policy = decide_wait_policy({}, ())
    assert additions == {"OMP_WAIT_POLICY": "PASSIVE"} and policy.effective
    additions, policy = decide_wait_policy({"OMP_WAIT_POLICY": "ACTIVE"}, ())
    assert additions == {} and policy.chosen_by == "user" and "ACTIVE" in policy.detail
    additions, policy = decide_wait_policy({}, ("/usr/lib/libgomp.so.1",))
    assert additions and not policy.effective and "libgomp.so.1" in policy.detail


def test_loaded_openmp_runtimes_reads_the_maps(tmp_path: Path) -> None:
    maps = tmp_path / "maps"
    maps.write_text(
        "7f00-7f01 r-xp 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0\n"
        "7f01-7f02 r-xp 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0\n"
        "7f02-7f03 r-xp 00000000 08:01 2 /usr/lib/libc.so.6\n"
        "7f03-7f04 rw-p 00000000 00:00 0 \n"
    )
    assert loaded_openmp_runtimes(maps) == ("/usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0",)
    assert loaded_openmp_runtimes(tmp_path / "absent") == ()


@pytest.mark.parametrize("count", [2**31 - 1, thread_team.max_team_threads() + 1])
def test_set_num_threads_refuses_more_threads_than_the_machine_runs(count: int) -> None:
    """Before the fix 2**31 - 1 reached libgomp, which exited the process (out of memory)."""
    with pytest.raises(ValueError, match=r"set_num_threads: count: expected an int >= 0 and <="):
        tl_runtime.set_num_threads(count)


def test_set_num_threads_accepts_the_bound() -> None:
    try:
        tl_runtime.set_num_threads(thread_team.max_team_threads())
    except RuntimeError:
        pytest.skip("no C helper here (no compiler)")
    finally:
        with contextlib.suppress(RuntimeError):
            tl_runtime.set_num_threads(0)


def test_a_thread_count_of_any_integer_type_is_a_count_and_a_bool_is_not() -> None:
    import numpy as np

    # np.int64(2) (a count computed with numpy) was refused as "expected an int".
    assert thread_team.validate_thread_count(np.int64(2)) == 2
    assert type(thread_team.validate_thread_count(np.int32(1))) is int
    for count in (True, np.bool_(True), 2.0, "2", np.int64(-1)):
        with pytest.raises(ValueError, match=r"set_num_threads: count: expected an int >= 0"):
            thread_team.validate_thread_count(count)
