"""The Python blocks of docs/quickstart.md run, in order, as one script (what a new user does)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_quickstart_python_blocks_run(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "quickstart.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 6
    script = tmp_path / "quickstart.py"
    script.write_text("\n".join(blocks))
    env = {**os.environ, "TL_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("TL_DISABLE_CACHE", None)
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert "correct" in result.stdout and "GFLOP/s" in result.stdout
    assert (tmp_path / "gemm_artifact" / "manifest.json").is_file()
