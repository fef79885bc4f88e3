"""The Python blocks of docs/quickstart.md run, in order, as one script (what a new user does)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_quickstart_tl_commands_run_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The `tl` lines of docs/quickstart.md, in order, on the page's own kernels (the eager
    `gemm` saved as my_gemm.py, the factory `matmul` as my_matmul.py); `tl bench` is left
    to its own tests (it times for seconds)."""
    import shlex

    from tl_jit import cli

    text = (ROOT / "docs" / "quickstart.md").read_text()
    python_blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    eager = next(b for b in python_blocks if "def gemm(" in b)
    factory = next(b for b in python_blocks if "def matmul(" in b)
    (tmp_path / "my_gemm.py").write_text(eager)
    (tmp_path / "my_matmul.py").write_text(factory)
    section = text[text.index("## The `tl` command") :]
    block = re.search(r"```bash\n(.*?)```", section, flags=re.S)
    assert block is not None
    lines = [line.split("#")[0].strip() for line in block.group(1).splitlines()]
    commands = [shlex.split(line)[1:] for line in lines if line.startswith("tl ")]
    assert any(c[:1] == ["compile"] and "--force" in c for c in commands)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TL_CACHE_DIR", str(tmp_path / "cache"))
    for command in commands:
        if command[0] == "bench":
            continue
        try:
            status = cli.main(command)
        except SystemExit as exc:  # --version
            status = int(exc.code or 0)
        assert status == 0, (command, capsys.readouterr().err)
    assert (tmp_path / "gemm_cli" / "manifest.json").is_file()
    assert (tmp_path / "gemm_cuda" / "manifest.json").is_file()
