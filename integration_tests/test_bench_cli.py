"""`tl bench`: the kernel's name, the median with its spread, and the throughput."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GEMM = f"{ROOT / 'examples' / 'gemm.py'}:matmul"
GEMM_ARGS = ["--arg", "M=64", "--arg", "N=64", "--arg", "K=32"]
GEMM_ARGS += ["--arg", "block_M=32", "--arg", "block_N=32", "--arg", "block_K=16"]


def _tl(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TL_CACHE_DIR": str(tmp_path / "cache")}
    return subprocess.run(
        [sys.executable, "-m", "tl_jit.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )


def test_bench_prints_name_median_spread_and_throughput(tmp_path: Path) -> None:
    """Before: ``main: 23.1769 ms (mean of timed calls)``: the prim_func's name, a mean,
    no spread, no throughput."""
    result = _tl(
        tmp_path, "bench", GEMM, "--target", "c", *GEMM_ARGS,
        "--warmup", "1", "--rep", "5", "--flops", "2*64*64*32",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    line = result.stdout.strip().splitlines()[-1]
    assert re.match(
        r"matmul \(main\): median [\d.e+-]+ ms \(IQR [\d.e+-]+ ms \.\. [\d.e+-]+ ms, "
        r"min [\d.e+-]+ ms, max [\d.e+-]+ ms; \d+ calls, \d+ outliers?\), [\d.]+ [kMGT]?FLOP/s",
        line,
    ), line


def test_bench_refuses_a_bad_work_amount(tmp_path: Path) -> None:
    result = _tl(tmp_path, "bench", GEMM, "--flops", "lots")
    assert result.returncode == 2 and "--flops: expected a number > 0" in result.stderr
