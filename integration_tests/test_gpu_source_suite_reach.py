"""integration_tests/kernels/README.md's recipe for a backend package outside this
repository: its test module, run from another directory with the checkout on
PYTHONPATH, reaches the kernel suite and the GPU source suite."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "integration_tests" / "kernels" / "README.md"


def _readme_test_module() -> str:
    text = README.read_text()
    section = text[text.index("## Testing a GPU backend package against the suite") :]
    (block,) = re.findall(r"```python\n(.*?)```", section.split("\n## ")[0], re.S)
    return block


def test_the_readme_test_module_runs_from_outside_the_repository(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_suite_sources.py").write_text(_readme_test_module())
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    from integration_tests.kernels import ALL_KERNELS

    assert f"{len(ALL_KERNELS)} passed" in result.stdout, result.stdout[-2000:]
