"""The ``tl`` command line end to end (subprocesses): backends, compile, inspect, cache, bench,
and one-line errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GEMM = f"{ROOT / 'examples' / 'gemm.py'}:matmul"
GEMM_ARGS = ["--arg", "M=64", "--arg", "N=64", "--arg", "K=32"]
GEMM_ARGS += ["--arg", "block_M=32", "--arg", "block_N=32", "--arg", "block_K=16"]


@pytest.fixture
def tl(tmp_path: Path):
    env = {**os.environ, "TL_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("TL_DISABLE_CACHE", None)

    def run(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [sys.executable, "-m", "tl_jit.cli", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=300,
        )
        if ok:
            assert result.returncode == 0, result.stderr
        return result

    return run


def test_console_script_is_installed() -> None:
    script = shutil.which("tl", path=str(Path(sys.executable).parent))
    assert script is not None
    result = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "compile" in result.stdout


def test_backends_lists_the_cpu_backend(tl) -> None:
    out = tl("backends").stdout
    assert "cpu" in out and "tvm_ffi" in out and "cython" in out


def test_compile_inspect_and_cache(tl, tmp_path: Path) -> None:
    out_dir = tmp_path / "artifact"
    tl("compile", GEMM, "--target", "c", "--out", str(out_dir), *GEMM_ARGS)
    manifest = json.loads((out_dir / "manifest.json").read_text())
    assert manifest["target"]["kind"] == "c"
    shown = tl("inspect", str(out_dir)).stdout
    assert "params:" in shown and "float32" in shown and "output (out_idx)" in shown
    assert "-----" in shown  # the sources follow
    assert "-----" not in tl("inspect", str(out_dir), "--no-source").stdout
    assert json.loads(tl("inspect", str(out_dir), "--json").stdout)["kernel"]
    info = tl("cache", "info").stdout
    assert "kernels:          1" in info
    assert "removed 1" in tl("cache", "clear").stdout
    assert "kernels:          0" in tl("cache", "info").stdout


def test_bench_prints_a_latency(tl) -> None:
    out = tl("bench", GEMM, "--target", "c", *GEMM_ARGS, "--warmup", "1", "--rep", "5").stdout
    assert " ms " in out


def test_user_errors_are_one_line(tl, tmp_path: Path) -> None:
    for args in (
        ("compile", "no_such_file.py:f", "--out", "x"),
        ("compile", GEMM, "--out", "x", "--target", "nonsense-target"),
        ("compile", f"{ROOT / 'examples' / 'gemm.py'}:nothing", "--out", "x"),
        ("inspect", str(tmp_path)),
        ("compile", GEMM, "--out", "x", "--arg", "oops"),
    ):
        result = tl(*args, ok=False)
        assert result.returncode == 1, args
        assert result.stderr.startswith("tl: "), result.stderr
        assert "Error:" not in result.stderr.splitlines()[0], result.stderr
        assert "Traceback" not in result.stderr
