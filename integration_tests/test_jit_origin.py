"""verbose=True says where a kernel came from: compiled, disk (also in a new process),
memory. Before: a cache hit in a new process printed nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent

SCRIPT = textwrap.dedent(
    f"""
    import sys
    sys.path.insert(0, {str(HERE)!r})
    import tl_jit
    import checked_kernels
    build = tl_jit.jit(checked_kernels.in_bounds, target="c", verbose=True)
    build(4, 8)
    build(4, 8)
    print("tvm imported:", "tvm" in sys.modules)
    """
)


def _run(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TL_CACHE_DIR": str(tmp_path / "cache")}
    for name in ("TL_DISABLE_CACHE", "TL_DEBUG", "TL_INTERPRET"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )


def test_verbose_names_the_origin_in_every_process(tmp_path: Path) -> None:
    first = _run(tmp_path)
    assert first.returncode == 0, first.stderr
    lines = [line for line in first.stderr.splitlines() if line.startswith("[tl_jit]")]
    assert len(lines) == 2, first.stderr
    assert "main: from compiled in" in lines[0] and "target c" in lines[0]
    assert "in_bounds: from memory in" in lines[1]
    second = _run(tmp_path)
    assert second.returncode == 0, second.stderr
    lines = [line for line in second.stderr.splitlines() if line.startswith("[tl_jit]")]
    assert len(lines) == 2, second.stderr
    assert "in_bounds: from disk (front-end memo" in lines[0] and "target c" in lines[0]
    assert "in_bounds: from memory" in lines[1]
    assert "tvm imported: False" in second.stdout
