"""Every script in examples/ runs as ``python examples/<name>.py`` and checks itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(p.name for p in (ROOT / "examples").glob("*.py"))
EXPECTED = {
    "autotune_gemm.py",
    "elementwise.py",
    "gemm.py",
    "rms_norm.py",
    "softmax.py",
    "symbolic_shape.py",
}
# Every example has an eager-style twin beside it (name_eager.py).
EXPECTED |= {name.replace(".py", "_eager.py") for name in EXPECTED}


def test_every_listed_example_exists() -> None:
    assert set(EXAMPLES) >= EXPECTED


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs(name: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    env = {
        **os.environ,
        "TL_CACHE_DIR": str(tmp_path_factory.getbasetemp() / "tl-jit-examples-cache"),
        "TL_AUTOTUNE_WORKERS": "2",
    }
    env.pop("TL_DISABLE_CACHE", None)
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, f"{name} failed:\n{result.stdout}\n{result.stderr}"
    assert "correct" in result.stdout or "best config" in result.stdout
