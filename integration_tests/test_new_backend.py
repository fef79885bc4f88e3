"""docs/backends.md's walkthrough, executed literally: a device backend with its own launcher.

The page's walkthrough is read from the page itself: every ``$ `` line of its
``console`` blocks runs in bash from the repository root (``WORK`` set to a
temporary directory outside the repository), and every ``python file=PATH``
block is written to ``$WORK/PATH`` right after the package is generated. The
one step done differently is ``pip install -e``: to leave the shared
development venv unchanged (and to need no build backend or network), each
package is "installed" the way importlib.metadata sees installed packages,
its ``src`` and a generated ``*.dist-info`` (``entry_points.txt`` from its
pyproject.toml) on ``PYTHONPATH`` of the later steps. The backend is a device
backend (``host_kind`` set) whose launcher runs here, so ``contracts/`` must
run the whole kernel suite through that launcher. Finally no file of the
repository may have changed: the new target ships with zero edits elsewhere.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from integration_tests.kernels import ALL_KERNELS
from integration_tests.plugins.activation import write_distribution_metadata

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "backends.md"
_FILE_BLOCK = re.compile(r"^```python file=(?P<path>\S+)\n(?P<code>.*?)^```$", re.M | re.S)
_CONSOLE_BLOCK = re.compile(r"^```console\n(?P<body>.*?)^```$", re.M | re.S)


def walkthrough() -> str:
    """The page's walkthrough section (from its heading to the end of the page)."""
    text = PAGE.read_text()
    start = text.index("## Walkthrough")
    return text[start:]


def file_blocks(section: str) -> dict[str, str]:
    """``python file=PATH`` blocks: relative path -> code."""
    return {m["path"]: m["code"] for m in _FILE_BLOCK.finditer(section)}


def commands(section: str) -> list[str]:
    """The ``$ `` lines of the section's console blocks, in order."""
    return [
        line[2:]
        for block in _CONSOLE_BLOCK.finditer(section)
        for line in block["body"].splitlines()
        if line.startswith("$ ")
    ]


def worktree_state() -> dict[str, str]:
    """Every path git reports as changed or untracked -> the sha256 of its content."""
    listing = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all", "-z"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    state = {}
    for entry in filter(None, listing.split("\0")):
        path = ROOT / entry[3:]
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "absent"
        state[entry[3:]] = f"{entry[:2]} {digest}"
    return state


def test_the_page_holds_the_walkthrough() -> None:
    section = walkthrough()
    generate = next(c for c in commands(section) if c.startswith("scripts/new-backend walk "))
    assert "--host-kind llvm" in generate  # a device-style backend
    assert set(file_blocks(section)) == {
        "tl-codegen-walk/src/tl_codegen_walk/pipeline.py",
        "tl-codegen-walk/src/tl_codegen_walk/codegen.py",
        "run_walk.py",
    }


def _install(packages: list[Path], site: Path, env: dict[str, str]) -> None:
    """What ``pip install`` makes visible: the sources, and the entry points in a dist-info."""
    for package in packages:
        write_distribution_metadata(package, site)
    entries = [*(str(package / "src") for package in packages), str(site)]
    previous = env.get("PYTHONPATH")
    env["PYTHONPATH"] = os.pathsep.join([*entries, *([previous] if previous else [])])


def _editable_paths(command: str, work: Path) -> list[Path]:
    """The package directories of ``pip install -e A -e B`` (``$WORK`` expanded)."""
    words = shlex.split(command.replace("$WORK", str(work)))
    return [Path(words[i + 1]) for i, word in enumerate(words) if word == "-e"]


def _env(tmp_path: Path, work: Path) -> dict[str, str]:
    env = dict(os.environ, WORK=str(work), TL_CACHE_DIR=str(tmp_path / "cache"))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def test_a_package_as_generated_passes_the_contract_checks(tmp_path: Path) -> None:
    """Before any code is written: installed, its own tests and contracts/ pass."""
    env = _env(tmp_path, tmp_path)
    package = tmp_path / "tl-codegen-fresh"
    launcher = tmp_path / "tl-runtime-fresh"
    generate = [str(ROOT / "scripts" / "new-backend"), "fresh", "--kind", "ext_dev"]
    tests = [str(launcher / "tests"), str(package / "tests")]
    for command in (
        [*generate, "--dest", str(package)],
        "INSTALL",
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "contracts",
            "-k",
            "fresh",
        ],
    ):
        if command == "INSTALL":
            _install([launcher, package], tmp_path / "site", env)
            continue
        done = subprocess.run(
            command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    assert re.search(r"\d+ passed", done.stdout), done.stdout


def test_the_walkthrough_ships_a_backend_with_its_own_launcher(tmp_path: Path) -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("needs the git checkout (the check compares git status before and after)")
    before = worktree_state()
    work = tmp_path / "work"
    work.mkdir()
    env = _env(tmp_path, work)
    section = walkthrough()
    outputs: list[str] = []
    for command in commands(section):
        if command.startswith("pip install -e "):
            _install(_editable_paths(command, work), tmp_path / "site", env)
            continue
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, f"$ {command}\n{done.stdout}\n{done.stderr}"
        outputs.append(done.stdout)
        if command.startswith("scripts/new-backend "):
            assert (work / "tl-codegen-walk" / "pyproject.toml").is_file()
            assert (work / "tl-runtime-walk" / "pyproject.toml").is_file()
            for relative, code in file_blocks(section).items():
                (work / relative).parent.mkdir(parents=True, exist_ok=True)
                (work / relative).write_text(code)
    assert re.search(r"\b4 passed", outputs[-3]), outputs[-3]  # the two packages' own tests
    # contracts -k walk ran the whole kernel suite through the device backend's launcher,
    # skipping nothing.
    contracts = outputs[-2]
    passed = re.search(r"(\d+) passed", contracts)
    assert passed and int(passed.group(1)) > len(ALL_KERNELS), contracts
    assert "skipped" not in contracts and "deselected" in contracts, contracts
    suite = [
        line
        for line in contracts.splitlines()
        if line.startswith("PASSED contracts/test_kernel_suite.py::") and "walk-ext_dev" in line
    ]
    assert len(suite) == len(ALL_KERNELS), contracts
    assert all(any(f"[{n}-" in line or f"-{n}]" in line for line in suite) for n in ALL_KERNELS)
    assert "adapter: walk_launcher" in outputs[-1], outputs[-1]
    assert worktree_state() == before, "the walkthrough changed files of the repository"
