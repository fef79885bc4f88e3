"""The CPU thread team's settings: the idle-wait default and the thread-count bound."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
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


def test_omp_num_threads_decision() -> None:
    decide = thread_team.decide_thread_count_env
    for unchanged in (None, "", "  ", "1", "128", " 7 ", "+4", "4,100000", "0128"):
        decision = decide(unchanged, 128)
        assert not decision.changed and decision.threads == 0 and not decision.warning
    for value, replacement in [
        ("129", "128"),
        ("100000", "128"),
        ("100000,2", "128,2"),
        ("9" * 5000, "128"),  # more digits than int() converts
    ]:
        decision = decide(value, 128)
        assert decision.changed and decision.replacement == replacement and decision.threads == 128
        assert "OMP_NUM_THREADS=" in decision.warning and "at most 128" in decision.warning
    assert "'100000'" in decide("100000", 128).warning
    for malformed in ("abc", "0", "-2", "1.5", "4x", ",4", "0,2"):
        decision = decide(malformed, 128)
        assert decision.changed and decision.replacement is None and decision.threads == 0
        assert f"OMP_NUM_THREADS={malformed!r} is malformed" in decision.warning


OPENMP_TEAM_SOURCE = """
int tl_test_team(void) {
  int n = 0;
#pragma omp parallel
  {
#pragma omp atomic
    n++;
  }
  return n;
}
"""


@pytest.mark.parametrize("value", ["100000", "50000"])
def test_a_huge_omp_num_threads_does_not_end_a_kernel_with_its_own_openmp_loop(
    value: str, tmp_path: Path
) -> None:
    """A kernel compiled with ``#pragma omp parallel`` (tl's ``c`` target) loads the OpenMP
    runtime, which reads OMP_NUM_THREADS: 100000 ended the process with SIGSEGV at the
    first parallel region, 50000 with libgomp's "Thread creation failed" (exit 1)."""
    import shutil

    compiler = shutil.which(os.environ.get("TL_RUNTIME_CC", "cc"))
    if compiler is None:
        pytest.skip("no C compiler")
    (tmp_path / "team.c").write_text(OPENMP_TEAM_SOURCE)
    library = tmp_path / "team.so"
    built = subprocess.run(
        [
            compiler,
            "-O1",
            "-fopenmp",
            "-shared",
            "-fPIC",
            str(tmp_path / "team.c"),
            "-o",
            str(library),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if built.returncode != 0:
        pytest.skip(f"no OpenMP compiler: {built.stderr[-300:]}")
    script = (
        "import ctypes, tl_runtime; from tl_runtime import thread_team; "
        f"print('TEAM', ctypes.CDLL({str(library)!r}).tl_test_team(), "
        "thread_team.max_team_threads())"
    )
    env = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": value}
    proc = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    team, cap = proc.stdout.split("TEAM")[-1].split()
    assert 1 <= int(team) <= int(cap)
    assert f"OMP_NUM_THREADS='{value}' asks for more threads" in proc.stderr


THREADS_SCRIPT = """
import os, warnings
warnings.simplefilter("always")
import numpy as np, tl_runtime
from tl_runtime import context, thread_team
kernel = tl_runtime.load({artifact!r})
a = np.arange(65536, dtype=np.float32)
assert (kernel(a, a) == 2 * a).all()
first = context.last_launch_threads()
tl_runtime.set_num_threads(0)
assert (kernel(a, a) == 2 * a).all()
print("RESULT", first, context.last_launch_threads(), thread_team.max_team_threads(),
      os.environ.get("OMP_NUM_THREADS"))
"""


def _run_threads_script(
    artifact: Callable[..., Path], warm_runtime_cache: Path, omp_num_threads: str
) -> subprocess.CompletedProcess[str]:
    """THREADS_SCRIPT on the padd artifact in a child with ``OMP_NUM_THREADS`` set."""
    padd = artifact("padd", out_idx=(2,))
    env = {
        **os.environ,
        "PYTHONPATH": SRC,
        "OMP_NUM_THREADS": omp_num_threads,
        "TL_RUNTIME_CACHE_DIR": str(warm_runtime_cache),
    }
    return subprocess.run(
        [sys.executable, "-c", THREADS_SCRIPT.format(artifact=str(padd))],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("value", ["100000", "1000"])
def test_a_huge_omp_num_threads_is_capped_for_the_helpers_launches(
    value: str, artifact: Callable[..., Path], warm_runtime_cache: Path
) -> None:
    """The llvm kernels' launches (the context helper's OpenMP team) stay within the bound,
    also after ``set_num_threads(0)``; the variable is lowered (children inherit that)."""
    proc = _run_threads_script(artifact, warm_runtime_cache, value)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    first, after_reset, cap, env_value = proc.stdout.split("RESULT")[-1].split()
    assert 1 <= int(first) <= int(cap) and 1 <= int(after_reset) <= int(cap)
    assert env_value == cap
    warnings = [line for line in proc.stderr.splitlines() if "RuntimeWarning" in line]
    assert len(warnings) == 1, proc.stderr
    assert f"OMP_NUM_THREADS='{value}'" in warnings[0] and f"at most {cap}" in warnings[0]


def test_a_malformed_omp_num_threads_is_removed_with_one_warning(
    artifact: Callable[..., Path], warm_runtime_cache: Path
) -> None:
    proc = _run_threads_script(artifact, warm_runtime_cache, "lots")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split("RESULT")[-1].split()[-1] == "None"  # removed from the environment
    warnings = [line for line in proc.stderr.splitlines() if "RuntimeWarning" in line]
    assert len(warnings) == 1 and "OMP_NUM_THREADS='lots' is malformed" in warnings[0]
