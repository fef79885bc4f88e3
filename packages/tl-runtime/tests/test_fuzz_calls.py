"""Hypothesis fuzz of call arguments over several kernels and both CPU adapters.

Kernels of several dtypes, ranks, symbolic dims, scalars and an in-place parameter
(``fuzz_calls.KERNELS``) get valid and damaged arguments. Every call must return what
numpy computes or raise TypeError/ValueError naming a parameter; valid calls must run.
The fuzz runs in a child process: a crash (a signal) fails the test and names the
example that caused it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import runtime_kernels as rk

FUZZ = Path(__file__).resolve().parent / "fuzz_calls.py"
OUT_IDX = {"vadd_n": (2,), "sum_diff": (2, 3), "axpb": (1,), "int_mix": (2,)}
KERNELS = [
    "vadd_elem",
    "vadd_n",
    "scale_rows",
    "sum_diff",
    "axpb",
    "accumulate",
    "int_mix",
    "strided_rows",
]


def _fuzz(examples: int, mode: str) -> None:
    directories = {
        name: str(
            rk.cached_artifact(name, **({"out_idx": OUT_IDX[name]} if name in OUT_IDX else {}))
        )
        for name in KERNELS
    }
    proc = subprocess.run(
        [sys.executable, str(FUZZ), json.dumps(directories), str(examples), mode],
        capture_output=True,
        text=True,
        timeout=3000,
    )
    tail = proc.stderr[-4000:]
    assert proc.returncode == 0, f"fuzz child exited with {proc.returncode}:\n{tail}"
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["examples"] >= examples, summary
    # Both outcomes are exercised: the fuzz neither only breaks calls nor only makes good ones.
    assert summary["ran"] >= examples // 5 and summary["refused"] >= examples // 5, summary


def test_fuzzed_calls_return_the_reference_or_a_named_error() -> None:
    _fuzz(250, "derandomize")


@pytest.mark.slow
def test_fuzzed_calls_many_examples() -> None:
    _fuzz(2500, "random")
