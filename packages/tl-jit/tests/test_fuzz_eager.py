"""Hypothesis fuzz of eager kernel calls on both CPU adapters (`fuzz_eager.py`).

Eager kernels (run-time and ``T.const`` dims, a float and an int template argument, an
allocated and an in-place output) get valid and damaged calls, some called twice with
their arrays changed in between. Every call must return what numpy computes or raise
TypeError/ValueError naming the damaged parameter (or the kernel); valid calls must run.
The fuzz runs in a child process: a crash (a signal) fails the test and names the last
example it began.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parent / "fuzz_eager.py"


def _fuzz(examples: int, mode: str, cache: Path) -> None:
    env = {**os.environ, "TL_CACHE_DIR": str(cache)}
    for name in ("TL_DISABLE_CACHE", "TL_DEBUG", "TL_INTERPRET", "TL_TARGET"):
        env.pop(name, None)
    proc = subprocess.run(
        [sys.executable, str(FUZZ), str(examples), mode],
        capture_output=True,
        text=True,
        timeout=3000,
        env=env,
    )
    started = [line for line in proc.stderr.splitlines() if line.startswith("example:")]
    tail = proc.stderr[-4000:]
    assert proc.returncode == 0, (
        f"fuzz child exited with {proc.returncode} (last example: "
        f"{started[-1] if started else 'none'}):\n{tail}"
    )
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["examples"] >= examples, summary
    # Both outcomes are exercised: the fuzz neither only breaks calls nor only makes good ones.
    assert summary["ran"] >= examples // 5 and summary["refused"] >= examples // 5, summary


def test_fuzzed_eager_calls_return_the_reference_or_a_named_error(tmp_path: Path) -> None:
    _fuzz(200, "derandomize", tmp_path / "cache")


@pytest.mark.slow
def test_fuzzed_eager_calls_many_examples(tmp_path: Path) -> None:
    _fuzz(3000, "random", tmp_path / "cache")
