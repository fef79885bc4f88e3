"""The layering check (import-linter, root pyproject.toml) passes, fails on bad imports,
and covers every package of the workspace.

Each case copies the root packages' sources into a temporary directory,
adds one offending module there, and runs ``lint-imports`` with that
directory first on PYTHONPATH, so the shared working tree is never touched
(other work runs in it at the same time). import-linter takes no wildcards in
``root_packages`` or ``layers``, so `unchecked_workspace_packages` proves that
every package under packages/ is named there (scripts/new-backend adds the
packages it generates into packages/).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _root_packages() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return list(config["tool"]["importlinter"]["root_packages"])


def unchecked_workspace_packages(root: Path) -> list[str]:
    """Import packages under ``root``/packages/*/src missing from root_packages or from a layer."""
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["importlinter"]
    layered = {
        name.strip()
        for contract in config["contracts"]
        if contract["type"] == "layers"
        for layer in contract["layers"]
        for name in layer.split("|")
    }
    found = sorted(init.parent.name for init in (root / "packages").glob("*/src/*/__init__.py"))
    return [name for name in found if name not in config["root_packages"] or name not in layered]


def test_every_workspace_package_is_layer_checked() -> None:
    assert unchecked_workspace_packages(ROOT) == [], (
        "add these packages to [tool.importlinter] in pyproject.toml "
        "(root_packages and their layer)"
    )


def test_a_package_missing_from_the_config_fails_the_coverage_check(tmp_path: Path) -> None:
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for init in (ROOT / "packages").glob("*/src/*/__init__.py"):
        copy = tmp_path / init.relative_to(ROOT)
        copy.parent.mkdir(parents=True)
        copy.touch()
    assert unchecked_workspace_packages(tmp_path) == []
    extra = tmp_path / "packages" / "tl-codegen-unlisted" / "src" / "tl_codegen_unlisted"
    extra.mkdir(parents=True)
    (extra / "__init__.py").touch()
    assert unchecked_workspace_packages(tmp_path) == ["tl_codegen_unlisted"]


def _copy_sources(dest: Path) -> None:
    for name in _root_packages():
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None, f"root package {name} is not installed"
        shutil.copytree(
            Path(spec.origin).parent, dest / name, ignore=shutil.ignore_patterns("__pycache__")
        )


def _lint(
    pythonpath: Path, config: Path = ROOT / "pyproject.toml"
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", str(config)],
        cwd=pythonpath,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def source_copy(tmp_path: Path) -> Path:
    _copy_sources(tmp_path)
    return tmp_path


def test_the_layering_check_passes_on_the_tree(source_copy: Path) -> None:
    result = _lint(source_copy)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "broken" in result.stdout and "0 broken" in result.stdout


UPWARD = """
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import {target}
"""


@pytest.mark.parametrize(
    ("package", "code", "contract"),
    [
        # upward, hidden behind TYPE_CHECKING
        ("tl_ir", UPWARD.format(target="tl_backend_api"), "Package layers"),
        ("tl_passes", UPWARD.format(target="tl_backend_api"), "Package layers"),
        ("tl_backend_api", "import tl_codegen_cuda\n", "Package layers"),
        ("tl_backend_api", UPWARD.format(target="tl_codegen_cpu"), "Package layers"),
        # sideways between independent siblings
        ("tl_ir", "import tl_runtime\n", "Package layers"),
        ("tl_codegen_cpu", "import tl_codegen_metal\n", "Package layers"),
        # the core reaches backends through the registry only, never by import
        ("tl_jit", "import tl_codegen_cpu\n", "The core imports no backend package"),
        (
            "tl_passes",
            UPWARD.format(target="tl_codegen_cuda"),
            "The core imports no backend package",
        ),
        # tl_runtime stays light
        ("tl_runtime", "import tvm\n", "tl_runtime imports neither tvm"),
        ("tl_runtime", UPWARD.format(target="tvm.target"), "tl_runtime imports neither tvm"),
        ("tl_passes", "import tl_runtime\n", "tl_passes builds on tl_ir and tvm only"),
        # a runtime plug-in builds on tl_runtime alone; nothing below reaches up to one
        ("tl_runtime_cuda", "import tvm\n", "Runtime plug-ins import neither tvm"),
        ("tl_runtime_cuda", UPWARD.format(target="tl_ir"), "Runtime plug-ins import neither"),
        ("tl_runtime", "import tl_runtime_cuda\n", "Package layers"),
        ("tl_jit", "import tl_runtime_cuda\n", "The core imports no backend package"),
    ],
)
def test_a_forbidden_import_fails_the_check(
    source_copy: Path, package: str, code: str, contract: str
) -> None:
    module = f"_tmp_layering_probe_{uuid.uuid4().hex[:8]}"
    (source_copy / package / f"{module}.py").write_text(code)
    result = _lint(source_copy)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert f"{contract}" in output and "BROKEN" in output, output
    assert f"{package}.{module}" in output, output


def test_a_package_scaffolded_into_packages_is_layer_checked_without_a_hand_edit(
    source_copy: Path,
) -> None:
    """scripts/new-backend adds a package it writes into packages/ to the import-linter config."""
    from tl_backend_api.scaffold import create_backend_package

    workspace = source_copy / "workspace"
    (workspace / "packages").mkdir(parents=True)
    shutil.copy(ROOT / "pyproject.toml", workspace / "pyproject.toml")
    package = create_backend_package(
        "layered", workspace / "packages" / "tl-codegen-layered", kind="ext_dev"
    )
    shutil.copytree(package / "src" / "tl_codegen_layered", source_copy / "tl_codegen_layered")
    launcher = workspace / "packages" / "tl-runtime-layered" / "src" / "tl_runtime_layered"
    shutil.copytree(launcher, source_copy / "tl_runtime_layered")
    assert unchecked_workspace_packages(workspace) == []

    config = workspace / "pyproject.toml"
    result = _lint(source_copy, config)
    assert result.returncode == 0, result.stdout + result.stderr
    (source_copy / "tl_codegen_layered" / "_probe.py").write_text("import tl_codegen_cpu\n")
    (source_copy / "tl_jit" / "_probe.py").write_text("import tl_codegen_layered\n")
    (source_copy / "tl_runtime_layered" / "_probe.py").write_text("import tvm\n")
    output = (result := _lint(source_copy, config)).stdout + result.stderr
    assert result.returncode != 0, output
    assert "tl_codegen_layered._probe -> tl_codegen_cpu" in output, output
    assert "tl_jit._probe -> tl_codegen_layered" in output, output
    assert "tl_runtime_layered._probe -> tvm" in output, output
