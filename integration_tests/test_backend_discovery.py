"""Discovery, override and selection through the test plugins, found by real entry points.

tl-backend-dummy serves TVM's ``ext_dev`` kind; tl-backend-broken declares
TVM's ``test`` kind and raises on import. Neither is installed in the
development venv: the `plugin_env` fixture writes their ``*.dist-info``
metadata into a temporary directory and puts it, with their sources, on the
``PYTHONPATH`` of each child interpreter. Each check runs in a fresh
interpreter so "loaded once, only for the kind asked" is observed from a
clean process.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from integration_tests.plugins.activation import plugin_path_entries, subprocess_env

ROOT = Path(__file__).resolve().parents[1]

_ENV: dict[str, str] = {}


@pytest.fixture(scope="module", autouse=True)
def plugin_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a child interpreter that discovers both test plugins."""
    _ENV.clear()
    entries = plugin_path_entries(tmp_path_factory.mktemp("plugins"))
    _ENV.update(subprocess_env([*entries, str(ROOT)]))  # ROOT: contracts.checks
    return _ENV


def _run(code: str) -> str:
    # A file, not ``-c``: TVMScript kernels need their source to be readable.
    with tempfile.TemporaryDirectory() as scratch:
        script = Path(scratch) / "check.py"
        script.write_text(textwrap.dedent(code))
        result = subprocess.run(
            [sys.executable, str(script)],
            capture_output=True,
            text=True,
            timeout=120,
            env=_ENV,
            cwd=ROOT,
        )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_resolving_a_kind_imports_only_that_kinds_plugin() -> None:
    out = _run(
        """
        import sys
        import tl_backend_api as api
        import tvm_ffi
        assert "tl_backend_dummy" not in sys.modules  # nothing loads at import
        import tl_backend_dummy.backend
        # callbacks are registered at first resolution, not at import
        assert tvm_ffi.get_global_func("tl_backend_dummy.describe", allow_missing=True) is None
        backend = api.resolve_backend("ext_dev")
        assert tvm_ffi.get_global_func("tl_backend_dummy.describe")() == "tl-backend-dummy"
        assert backend.name == "dummy"
        assert "tl_backend_dummy.backend" in sys.modules
        assert "tl_backend_broken.backend" not in sys.modules
        assert api.discovery_errors() == ()
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_a_broken_plugin_is_named_and_breaks_nothing_else() -> None:
    out = _run(
        """
        import warnings
        import tl_backend_api as api
        try:
            api.resolve_backend("test")
        except api.PluginImportError as exc:
            print("error:", exc)
        names = [b.name for b in api.list_backends()]
        print("has dummy:", "dummy" in names)
        print("failures:", [f.distribution for f in api.discovery_errors()])
        print("ext_dev:", api.resolve_backend("ext_dev").name)
        print(api.format_backend_report())
        """
    )
    assert "error: no backend for target kind 'test'" in out
    assert "'tl-backend-broken'" in out and "fails to import on purpose" in out
    # Every other installed backend still loads (the list grows as codegen
    # packages land, so only the test plugin's presence is asserted).
    assert "has dummy: True" in out
    assert "failures: ['tl-backend-broken']" in out
    assert "ext_dev: dummy" in out
    assert "plugins that failed to load: 1" in out


def test_an_explicit_override_replaces_the_plugin_backend() -> None:
    out = _run(
        """
        import attrs
        import tl_backend_api as api
        from tl_backend_dummy.backend import BACKEND
        original = api.resolve_backend("ext_dev")
        assert original is BACKEND
        try:
            api.registry.register_backend(attrs.evolve(BACKEND))
        except api.BackendConflictError as exc:
            print("conflict:", exc)
        mine = attrs.evolve(BACKEND, execution_backends=(api.ExecutionBackendSpec("tvm_ffi"),))
        api.registry.register_backend(mine, override=True)
        print("resolved mine:", api.resolve_backend("ext_dev") is mine)
        print("auto:", api.create_backend_context("ext_dev").execution_backend.name)
        """
    )
    assert "conflict: a different backend is already registered under the name 'dummy'" in out
    assert "resolved mine: True" in out
    assert "auto: tvm_ffi" in out


def test_selection_against_the_dummy_backend() -> None:
    out = _run(
        """
        import tl_backend_api as api
        import tvm
        from tl_backend_dummy.codegen import DummyDeviceCodegen

        context = api.create_backend_context("ext_dev")
        print("auto:", context.execution_backend.name, context.adapter)
        for name in ("driver", "ctypes", "nope"):
            try:
                api.create_backend_context("ext_dev", execution_backend=name)
            except api.BackendError as exc:
                print(f"{name}:", type(exc).__name__, str(exc).replace(chr(10), " | "))
        n = tvm.tirx.Var("n", "int32")
        func = tvm.tirx.PrimFunc([n], tvm.tirx.Evaluate(0)).with_attr("global_symbol", "k")
        mod = tvm.IRModule({"k": func})
        lowered = context.lower(mod)
        print("lowered target:", lowered["k"].attrs["target"].kind.name)
        built = context.build(lowered)
        print("compiled:", built.compiled, sorted(built.binaries))
        source_only = api.create_backend_context("ext_dev", execution_backend="cython")
        before = DummyDeviceCodegen.build_count
        result = source_only.build(lowered)
        print("source-only:", result.compiled, DummyDeviceCodegen.build_count == before)
        print("floats:", sorted(context.capabilities.float_dtypes))
        named = api.create_backend_context({"kind": "ext_dev", "model": "m1"})
        print("named model floats:", sorted(named.capabilities.float_dtypes))
        half = tvm.tirx.PrimFunc([], tvm.tirx.Evaluate(tvm.tirx.const(1, "float16")))
        try:
            context.lower(tvm.IRModule({"h": half.with_attr("global_symbol", "h")}))
        except api.MissingCapabilityError as exc:
            print("fp16:", type(exc).__name__, str(exc).replace(chr(10), " | "))
        print("callback:", tvm.get_global_func("tl_backend_dummy.describe")())
        """
    )
    assert "auto: fast tvm_ffi" in out
    assert "driver: ExecutionBackendUnavailableError" in out and "a device driver" in out
    assert (
        "ctypes: ExecutionBackendError" in out
        and "'ctypes' was removed; 'cython' replaced it" in out
    )
    assert "['driver', 'fast', 'cython']" in out
    assert "nope: ExecutionBackendError" in out
    assert "lowered target: ext_dev" in out
    assert "compiled: True ['k.tvmscript.bin']" in out
    assert "source-only: False True" in out
    assert "floats: ['float32']" in out
    assert "named model floats: ['float16', 'float32']" in out
    assert "fp16: MissingCapabilityError kernel h cannot run on target 'ext_dev'" in out
    assert "computes in float16; the device computes in ['float32'] only" in out
    assert "callback: tl-backend-dummy" in out


def test_the_report_command_lists_the_plugins_when_they_are_on_the_path() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tl_backend_api"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_ENV,
    )
    assert result.returncode == 0, result.stderr
    assert "dummy" in result.stdout and "ext_dev" in result.stdout
    assert "tl-backend-broken" in result.stdout


@pytest.mark.parametrize(
    "command",
    [["-m", "tl_backend_api"], ["-m", "tl_jit.cli", "backends"]],
    ids=["python-m-tl_backend_api", "tl-backends"],
)
def test_the_development_venv_shows_the_real_backends_only(command: list[str]) -> None:
    """Outside the tests the plugins are invisible: no dummy, no load failure."""
    result = subprocess.run([sys.executable, *command], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "cpu" in result.stdout
    assert "dummy" not in result.stdout and "ext_dev" not in result.stdout
    assert "failed to load" not in result.stdout and "tl-backend-broken" not in result.stdout


def test_the_contract_checks_accept_the_dummy_backend() -> None:
    """The dummy's own contract module covers every part it declares (contracts/checks.py)."""
    out = _run(
        """
        import tl_backend_api as api
        from contracts.checks import backend_packages, contract_problems, import_contract_module
        backend = api.resolve_backend("ext_dev")
        (package,) = backend_packages([backend])[backend.name]
        module = import_contract_module(package)
        print("package:", package)
        print("problems:", contract_problems(backend, module))
        module.check_types()
        api.assert_conforms(backend)
        """
    )
    assert "package: tl_backend_dummy" in out
    assert "problems: []" in out


def test_the_artifacts_main_file_is_the_first_binary_else_the_first_source() -> None:
    """docs/backends.md, "Which file is the artifact's main file"."""
    out = _run(
        """
        import json, pathlib, tempfile
        import tl_backend_api as api
        from tvm.script import tirx as T

        @T.prim_func
        def scale(A: T.Buffer((4,), "float32")):
            for i in range(4):
                A[i] = A[i] * T.float32(2)

        root = pathlib.Path(tempfile.mkdtemp())
        for spec in ("cython", "fast"):
            context = api.create_backend_context("ext_dev", execution_backend=spec)
            artifact = api.build_artifact(context, scale, root / spec)
            manifest = json.loads((artifact / "manifest.json").read_text())
            roles = {f["path"]: f["role"] for f in manifest["files"]}
            print(spec, manifest["library"], roles)
        """
    )
    # Source only (no binaries): the first source file; compiled: the first binary.
    assert "cython scale.tvmscript {'scale.tvmscript': 'source'}" in out, out
    assert "fast scale.tvmscript.bin {'scale.tvmscript.bin': 'library'" in out, out


def test_the_dummy_contract_module_type_checks(tmp_path: Path) -> None:
    """mypy --strict over the dummy's sources (./scripts/test covers packages/*/src only).

    The cache is seeded from the repository's (``./scripts/test`` runs mypy with the same
    config just before pytest), so only the dummy's sources are checked anew (~1 s, ~25 s
    cold); mypy re-checks whatever changed since the cache was written."""
    plugin_src = ROOT / "integration_tests" / "plugins" / "tl-backend-dummy" / "src"
    seed = ROOT / ".mypy_cache"
    if seed.is_dir():
        shutil.copytree(seed, tmp_path / "mypy-cache", ignore_dangling_symlinks=True)
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("mypy")),
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(tmp_path / "mypy-cache"),
            str(plugin_src),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
