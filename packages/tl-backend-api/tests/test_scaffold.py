"""scripts/new-backend: the generated packages pass the contract checks without being installed."""

from __future__ import annotations

import importlib
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from tl_backend_api import Backend, ExecutionBackendUnavailableError, create_backend_context
from tl_backend_api.conformance import conformance_problems
from tl_backend_api.registry import isolated_registry
from tl_backend_api.scaffold import (
    ScaffoldError,
    create_backend_package,
    main,
    register_in_workspace,
    runtime_package_dir,
    workspace_config_for,
)

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


@pytest.fixture
def generated(tmp_path: Path) -> Iterator[Path]:
    package = create_backend_package(
        "scaffolded", tmp_path / "tl-codegen-scaffolded", kind="ext_dev"
    )
    sources = [str(package / "src"), str(runtime_package_dir(package, "scaffolded") / "src")]
    sys.path[:0] = sources
    try:
        yield package
    finally:
        for entry in sources:
            sys.path.remove(entry)
        for name in [m for m in sys.modules if m.startswith(("tl_codegen_", "tl_runtime_scaf"))]:
            if "scaffolded" in name:
                del sys.modules[name]


def test_layout_and_entry_points(generated: Path) -> None:
    module = generated / "src" / "tl_codegen_scaffolded"
    names = ("__init__", "backend", "pipeline", "codegen", "toolchain", "language", "contract")
    for name in names:
        assert (module / f"{name}.py").is_file(), name
    assert not (module / "launcher.py").exists()  # the launcher is a distribution of its own
    assert (module / "py.typed").is_file()
    assert (generated / "tests" / "test_contract.py").is_file()
    project = tomllib.loads((generated / "pyproject.toml").read_text())["project"]
    assert project["name"] == "tl-codegen-scaffolded"
    assert project["entry-points"] == {
        "tl.backends": {"ext_dev": "tl_codegen_scaffolded.backend:BACKEND"}
    }
    assert "tl-runtime-scaffolded" in project["dependencies"]

    runtime = runtime_package_dir(generated, "scaffolded")
    assert runtime == generated.parent / "tl-runtime-scaffolded"
    for name in ("__init__", "launcher", "contract"):
        assert (runtime / "src" / "tl_runtime_scaffolded" / f"{name}.py").is_file(), name
    assert (runtime / "tests" / "test_launcher.py").is_file()
    launcher_project = tomllib.loads((runtime / "pyproject.toml").read_text())
    assert launcher_project["project"]["name"] == "tl-runtime-scaffolded"
    assert launcher_project["project"]["dependencies"] == ["tl-runtime"]
    assert launcher_project["project"]["entry-points"] == {
        "tl.adapters": {"scaffolded_launcher": "tl_runtime_scaffolded.launcher:Launcher"}
    }
    for config in (project, launcher_project["project"]):
        assert config["name"]
    assert launcher_project["build-system"]["build-backend"] == "hatchling.build"


def test_the_launcher_imports_tl_runtime_and_nothing_else_of_tl(generated: Path) -> None:
    runtime = runtime_package_dir(generated, "scaffolded") / "src" / "tl_runtime_scaffolded"
    for path in runtime.glob("*.py"):
        imported = re.findall(r"^(?:from|import) (\w+)", path.read_text(), re.M)
        assert {m for m in imported if m.startswith("tl") or m == "tvm"} <= {"tl_runtime"}, path


def test_generated_backend_passes_the_contract_checks(generated: Path) -> None:
    backend = importlib.import_module("tl_codegen_scaffolded.backend").BACKEND
    assert isinstance(backend, Backend) and backend.name == "scaffolded"
    importlib.import_module("tl_codegen_scaffolded.contract").check_types()
    # Not installed here, so its tl.adapters entry point is not in any metadata yet:
    # name the launcher's key as installed (integration_tests/test_new_backend.py installs it).
    launcher = importlib.import_module("tl_runtime_scaffolded.launcher").Launcher
    assert launcher.key == "scaffolded_launcher"
    missing = conformance_problems(backend, adapter_keys={"tvm_ffi"})
    assert any("scaffolded_launcher" in problem for problem in missing), missing
    assert conformance_problems(backend, adapter_keys={"tvm_ffi", launcher.key}) == []
    with isolated_registry(discover=False):
        from tl_backend_api import resolve_backend
        from tl_backend_api.registry import register_backend

        register_backend(backend)
        assert resolve_backend("ext_dev") is backend
        # Not installed, the launcher's probe says no: the spec says what to install.
        with pytest.raises(ExecutionBackendUnavailableError, match="install tl-runtime-scaffolded"):
            create_backend_context("ext_dev")
    with pytest.raises(NotImplementedError, match="emit_source is not implemented"):
        backend.device_codegens["ext_dev"].emit_source(None, None)


def test_generated_backend_declares_the_descriptor_fields(generated: Path) -> None:
    source = (generated / "src" / "tl_codegen_scaffolded" / "backend.py").read_text()
    for field in (
        "is_active=",
        "auto_kind=",
        "auto_priority=",
        "kind_aliases=",
        "host_kind=",
        "capabilities=",
        "argument_alignment=",
        "argument_device_types=",
    ):
        assert field in source, field
    backend = importlib.import_module("tl_codegen_scaffolded.backend").BACKEND
    assert backend.is_active() is True and backend.auto_kind is None
    assert backend.argument_device_types == (1,) and backend.host_kind is None


def test_a_device_backend_gets_its_host_kind(tmp_path: Path) -> None:
    package = create_backend_package("device", tmp_path / "tl-codegen-device", "ext_dev", "llvm")
    source = (package / "src" / "tl_codegen_device" / "backend.py").read_text()
    assert "host_kind='llvm',  # the kind that runs the host side" in source
    with pytest.raises(ScaffoldError, match="host_kind: expected a TVM target kind"):
        create_backend_package("other", tmp_path / "tl-codegen-other", "ext_dev", "no-such")


def test_generated_toolchain_finds_the_c_compiler(generated: Path) -> None:
    toolchain = importlib.import_module("tl_codegen_scaffolded.toolchain").CCompiler()
    info = toolchain.discover()
    if info is None:
        pytest.skip("no C compiler on this machine")
    source = generated / "k.c"
    source.write_text("int k(void) { return 42; }\n")
    output = toolchain.compile_shared_object([source], generated / "k.so")
    assert output.is_file()
    from tl_backend_api import ToolchainError

    source.write_text("int k(void) { return }\n")
    with pytest.raises(ToolchainError) as excinfo:
        toolchain.compile_shared_object([source], generated / "k2.so")
    assert str(source) in str(excinfo.value) and "error" in str(excinfo.value)


def test_generated_package_is_lint_and_format_clean(generated: Path) -> None:
    config = str(ROOT / "pyproject.toml")
    for command in (["check"], ["format", "--check"]):
        done = subprocess.run(
            [str(BIN / "ruff"), *command, "--config", config, str(generated.parent)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stdout + done.stderr


def test_bad_arguments_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ScaffoldError, match="name: expected lowercase"):
        create_backend_package("Bad-Name", tmp_path / "a")
    with pytest.raises(ScaffoldError, match="kind: expected a TVM target kind"):
        create_backend_package("foo", tmp_path / "b")
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "file").write_text("x")
    with pytest.raises(ScaffoldError, match="dest: expected a new or empty directory"):
        create_backend_package("opencl", taken)
    launcher_taken = tmp_path / "tl-runtime-opencl"
    launcher_taken.mkdir()
    (launcher_taken / "file").write_text("x")
    with pytest.raises(ScaffoldError, match="tl-runtime-opencl' holding files"):
        create_backend_package("opencl", tmp_path / "tl-codegen-opencl")
    assert main(["foo", "--dest", str(tmp_path / "c")]) == 2
    assert "kind: expected a TVM target kind" in capsys.readouterr().err
    assert main(["webgpu", "--dest", str(tmp_path / "d")]) == 0
    assert (tmp_path / "d" / "src" / "tl_codegen_webgpu" / "backend.py").is_file()


def _seeded_mypy_cache(tmp_path: Path) -> Path:
    """A mypy cache for one run, seeded from the repository's own when there is one.

    ``./scripts/test`` runs ``mypy packages/*/src contracts`` (same config) just before
    pytest: with its cache the run checks the generated sources only (~1 s instead of
    ~25 s re-checking numpy and the tl_* packages); mypy still re-checks anything whose
    source differs from what the cache recorded, so the verdict is the same."""
    cache = tmp_path / "mypy-cache"
    seed = ROOT / ".mypy_cache"
    if seed.is_dir():
        shutil.copytree(seed, cache, ignore_dangling_symlinks=True)
    return cache


def test_generated_package_is_mypy_strict_clean(generated: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [
            str(BIN / "mypy"),
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(_seeded_mypy_cache(tmp_path)),
            str(generated / "src"),
            str(runtime_package_dir(generated, "scaffolded") / "src"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=generated,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _importlinter(pyproject: Path) -> dict[str, object]:
    section: dict[str, object] = tomllib.loads(pyproject.read_text())["tool"]["importlinter"]
    return section


def test_a_package_generated_into_packages_joins_the_layering_config(tmp_path: Path) -> None:
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "packages").mkdir()
    dest = tmp_path / "packages" / "tl-codegen-joined"
    assert workspace_config_for(dest) == (tmp_path / "pyproject.toml").resolve()
    create_backend_package("joined", dest, kind="ext_dev")
    config = _importlinter(tmp_path / "pyproject.toml")
    assert "tl_codegen_joined" in config["root_packages"]  # type: ignore[operator]
    contracts = {c["id"]: c for c in config["contracts"]}  # type: ignore[attr-defined]
    codegen_layer = next(layer for layer in contracts["layers"]["layers"] if "tl_codegen_" in layer)
    assert codegen_layer.endswith("| tl_codegen_joined")
    for contract_id in ("runtime-is-light", "core-imports-no-backend"):
        assert "tl_codegen_joined" in contracts[contract_id]["forbidden_modules"], contract_id
    # The launcher package joins the runtime plug-ins.
    assert "tl_runtime_joined" in config["root_packages"]  # type: ignore[operator]
    plugin_layer = next(x for x in contracts["layers"]["layers"] if "tl_runtime_cuda" in x)
    assert plugin_layer.endswith("| tl_runtime_joined")
    assert "tl_runtime_joined" in contracts["runtime-plugins-are-light"]["source_modules"]
    assert "tl_runtime_joined" in contracts["core-imports-no-backend"]["forbidden_modules"]
    assert "tl_runtime_joined" in contracts["passes-below-runtime-free"]["forbidden_modules"]
    # Idempotent: a second registration changes nothing.
    before = (tmp_path / "pyproject.toml").read_text()
    assert register_in_workspace(tmp_path / "pyproject.toml", "tl_codegen_joined") is False
    assert (tmp_path / "pyproject.toml").read_text() == before


def test_a_package_generated_elsewhere_touches_no_config(tmp_path: Path) -> None:
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    before = (tmp_path / "pyproject.toml").read_text()
    dest = tmp_path / "elsewhere" / "tl-codegen-outside"
    assert workspace_config_for(dest) is None
    create_backend_package("outside", dest, kind="ext_dev")
    assert (tmp_path / "pyproject.toml").read_text() == before


def test_a_config_without_importlinter_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    with pytest.raises(ScaffoldError, match=r"expected a \[tool.importlinter\] section"):
        register_in_workspace(tmp_path / "pyproject.toml", "tl_codegen_x")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.importlinter]\nroot_packages = ["a"]\n'
        '[[tool.importlinter.contracts]]\nid = "l"\nname = "l"\ntype = "layers"\nlayers = ["a"]\n'
    )
    with pytest.raises(ScaffoldError, match="add it there by hand"):
        register_in_workspace(tmp_path / "pyproject.toml", "tl_codegen_x")
