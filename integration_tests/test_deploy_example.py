"""docs/deploy.md's worked example, run as written (issue 21 item 2), for ``c`` and ``llvm``:
export on the build machine (``kernel.export`` for c, the page's ``tl compile`` line for
llvm), the wheel built by ``scripts/build-runtime-wheel`` (tagged manylinux), and the load
step in a fresh venv holding only that wheel, apache-tvm-ffi and numpy, with no C compiler
on PATH, where the kernel's parallel loop runs on the helper the wheel ships.

Slow (a wheel build and a venv install: minutes on a loaded machine): excluded from
./scripts/test; run with ``pytest -m slow integration_tests/test_deploy_example.py``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "deploy.md"
TVM_FFI_REQUIREMENT = "apache-tvm-ffi==0.1.15.post2"
_NETWORK_HINTS = ("Could not find a version", "No matching distribution", "connection")

pytestmark = pytest.mark.slow


def _whole_path_section() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## The whole path")
    return text[start : text.index("\n## ", start + 1)]


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", _whole_path_section(), flags=re.S)


def _run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(command, capture_output=True, text=True, timeout=1200, **kwargs)  # type: ignore[call-overload]
    assert result.returncode == 0, f"$ {shlex.join(command)}\n{result.stdout}\n{result.stderr}"
    return result


def test_the_deploy_page_example_runs_without_a_compiler(tmp_path: Path) -> None:
    build_script, load_script = _blocks("python")
    tl_compile = next(
        line[2:]
        for block in _blocks("console")
        for line in block.splitlines()
        if line.startswith("$ tl compile")
    )
    env = {**os.environ, "TL_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("TL_DISABLE_CACHE", None)
    # 1. the build machine: c through kernel.export, llvm through the page's tl compile line
    machines = {"c": tmp_path / "c", "llvm": tmp_path / "llvm"}
    for directory in machines.values():
        directory.mkdir()
        (directory / "vadd.py").write_text(build_script)
    _run([sys.executable, "vadd.py"], cwd=machines["c"], env={**env, "TL_TARGET": "c"})
    tl = str(Path(sys.executable).parent / "tl")
    _run([tl, *shlex.split(tl_compile)[1:]], cwd=machines["llvm"], env=env)
    for target, directory in machines.items():
        manifest = json.loads((directory / "out" / "vadd" / "manifest.json").read_text())
        assert manifest["target"]["kind"] == target
    # 2. the wheel, repaired into a manylinux wheel
    built = _run([str(ROOT / "scripts" / "build-runtime-wheel"), str(tmp_path / "dist")], cwd=ROOT)
    wheel = Path(built.stdout.strip().splitlines()[-1])
    assert wheel.is_file() and "manylinux" in wheel.name, wheel.name
    # 4. the target machine: the wheel, apache-tvm-ffi and numpy in a fresh venv
    venv = tmp_path / "deploy-venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    python = venv / "bin" / "python"
    install = subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            str(wheel),
            TVM_FFI_REQUIREMENT,
            "numpy",
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    if install.returncode != 0 and any(h in install.stderr for h in _NETWORK_HINTS):
        pytest.skip(f"cannot install from the package index here: {install.stderr[-300:]}")
    assert install.returncode == 0, install.stderr
    # 5. load and call, exactly as the page says, with no compiler on PATH
    probe = (
        "\nimport os, shutil\nfrom tl_runtime import context\n"
        "status = context.ensure_context_symbols()\n"
        "print('REPORT', status.parallel, status.helper_path, context.last_launch_threads(),"
        " os.cpu_count(), [shutil.which(n) for n in ('cc', 'gcc', 'clang')])\n"
    )
    run_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "CC")}
    run_env["PATH"] = str(venv / "bin")
    for target, directory in machines.items():
        run_env["TL_RUNTIME_CACHE_DIR"] = str(tmp_path / f"runtime-cache-{target}")
        result = _run([str(python), "-c", load_script + probe], cwd=directory, env=run_env)
        report = next(x for x in result.stdout.splitlines() if x.startswith("REPORT"))
        _, parallel, helper, threads, cpus, compilers = report.split(" ", 5)
        assert parallel == "True", (target, result.stdout)
        assert helper.startswith(str(venv)), helper  # the helper the wheel ships
        assert compilers == "[None, None, None]"
        if target == "llvm" and int(cpus) >= 2:
            # llvm kernels launch their parallel loop through the helper (c kernels carry
            # their own OpenMP pragmas and never call it)
            assert int(threads) >= 2, (target, report)
