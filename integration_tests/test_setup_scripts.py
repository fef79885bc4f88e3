"""scripts/_env.sh (issue 21 item 6): ./scripts/demo installs only what the demo needs
(no torch, no test tools) and shows pip's progress; ./scripts/test adds the dev tools to
the same venv; each reinstalls only when it needs more. Run against a stand-in python
that records what pip is asked to install (no registry, no minutes of downloads)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_FAKE_PYTHON = """#!/usr/bin/env bash
# Stands in for python3 and the venv's python: records every call.
echo "$0 $*" >> "$FAKE_LOG"
if [[ "$1" == "--version" ]]; then echo "Python 3.11.0"; exit 0; fi
if [[ "$1 $2" == "-m venv" ]]; then
    mkdir -p "$3/bin"; cp "$0" "$3/bin/python"; exit 0
fi
if [[ "$1 $2 $3" == "-m pip install" ]]; then
    echo "Collecting numpy"; echo "Downloading numpy-2.0.whl (16 MB)"
    echo "Installing collected packages: numpy"; exit 0
fi
exit 0
"""


def _fake_checkout(tmp_path: Path) -> tuple[Path, Path]:
    checkout = tmp_path / "repo"
    (checkout / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "_env.sh", checkout / "scripts" / "_env.sh")
    for name in ("requirements-demo.txt", "requirements-dev.txt"):
        shutil.copy(ROOT / name, checkout / name)
    for project in (ROOT / "packages").glob("*/pyproject.toml"):
        target = checkout / "packages" / project.parent.name
        target.mkdir(parents=True)
        shutil.copy(project, target / "pyproject.toml")
    python = tmp_path / "python3"
    python.write_text(_FAKE_PYTHON)
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    return checkout, python


def _setup(checkout: Path, python: Path, log: Path, profile: str) -> str:
    env = {**os.environ, "PYTHON": str(python), "FAKE_LOG": str(log), "TL_ENV_PROFILE": profile}
    result = subprocess.run(
        ["bash", "-c", f"source {checkout / 'scripts' / '_env.sh'}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stderr


def _pip_calls(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if "-m pip install" in line]


def test_the_demo_installs_only_what_it_needs_and_test_adds_the_dev_tools(
    tmp_path: Path,
) -> None:
    checkout, python = _fake_checkout(tmp_path)
    log = tmp_path / "calls.log"
    log.touch()
    shown = _setup(checkout, python, log, "demo")
    installs = [c for c in _pip_calls(log) if "-e " in c]
    assert len(installs) == 1
    assert "requirements-demo.txt" in installs[0] and "requirements-dev.txt" not in installs[0]
    assert "[setup]   Collecting numpy" in shown  # pip's progress, as it happens
    demo_requirements = [
        line.split("#")[0].strip().lower()
        for line in (ROOT / "requirements-demo.txt").read_text().splitlines()
    ]
    for heavy in ("torch", "pytest", "ruff", "mypy"):
        assert not any(line.startswith(heavy) for line in demo_requirements)
    # the demo again: nothing to do
    log.write_text("")
    _setup(checkout, python, log, "demo")
    assert _pip_calls(log) == []
    # ./scripts/test: the dev tools are added
    _setup(checkout, python, log, "dev")
    (dev_install,) = [c for c in _pip_calls(log) if "-e " in c]
    assert "requirements-dev.txt" in dev_install
    dev_requirements = (ROOT / "requirements-dev.txt").read_text()
    assert "-r requirements-demo.txt" in dev_requirements and "torch" in dev_requirements
    # and the demo is content with a dev venv
    log.write_text("")
    _setup(checkout, python, log, "demo")
    assert _pip_calls(log) == []


def test_the_scripts_choose_their_profile() -> None:
    assert 'TL_ENV_PROFILE="${TL_ENV_PROFILE:-demo}"' in (ROOT / "scripts" / "demo").read_text()
    assert "TL_ENV_PROFILE=dev" in (ROOT / "scripts" / "test").read_text()
