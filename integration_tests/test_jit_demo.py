"""scripts/demo.py prints the backend table, checks the GEMM against numpy and prints GFLOP/s."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_demo_checks_and_times_the_gemm(tmp_path: Path) -> None:
    env = {**os.environ, "TL_CACHE_DIR": str(tmp_path / "cache")}
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "demo.py"), "--size", "192"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "installed backends" in out and "cpu" in out
    assert "check against numpy: OK" in out
    assert out.count("GFLOP/s") >= 2 and "ratio kernel/numpy" in out
