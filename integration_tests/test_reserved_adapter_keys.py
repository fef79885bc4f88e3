"""No repository test can break because a backend package takes an adapter key.

A new backend's launcher key (`tl_backend_api.scaffold.launcher_key`, ``NAME_launcher``
by default) once collided with a tl-runtime test that used ``"opencl_launcher"`` as its
example of a key nobody installs: installing a correct OpenCL backend made the test
fail. The rule since then: every adapter key a repository test names is either
declared by a package of this repository (a ``tl.adapters`` entry point in a
pyproject.toml), or installed by the test file itself (an entry-point mapping it
writes, or an adapter class's ``key``), or reserved
(`tl_backend_api.conformance.RESERVED_ADAPTER_KEY_PREFIX`), which conformance
refuses and the scaffold never generates. So whatever the scaffold's default key
scheme becomes, and whatever a backend package names its launcher, no test that
assumes a key absent can meet it installed.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from tl_backend_api.conformance import RESERVED_ADAPTER_KEY_PREFIX
from tl_backend_api.descriptors import REMOVED_EXECUTION_BACKENDS
from tl_backend_api.scaffold import ScaffoldError, create_backend_package, launcher_key

ROOT = Path(__file__).resolve().parents[1]
_KEY_CALLS = {"get_adapter", "adapter_availability"}


def declared_in_the_repository() -> set[str]:
    """Keys declared under ``tl.adapters`` by a pyproject.toml of this repository."""
    keys: set[str] = set()
    for pyproject in [
        *ROOT.glob("packages/*/pyproject.toml"),
        *ROOT.glob("integration_tests/plugins/*/pyproject.toml"),
    ]:
        project = tomllib.loads(pyproject.read_text()).get("project", {})
        keys |= set(project.get("entry-points", {}).get("tl.adapters", {}))
    return keys


def repository_test_modules() -> Iterator[Path]:
    """Every test module of the repository (and the helpers beside them)."""
    for folder in [*ROOT.glob("packages/*/tests"), ROOT / "integration_tests", ROOT / "contracts"]:
        yield from (p for p in folder.rglob("*.py") if "plugins" not in p.parts)


def _text(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def named_keys(tree: ast.AST) -> set[str]:
    """Adapter keys the module names: ``get_adapter("k")``, ``adapter_availability("k")``,
    ``load(..., adapter="k")``, ``ExecutionBackendSpec(..., adapter="k")`` and
    ``"k" in/not in ...adapter_keys()``."""
    keys: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if _callee(node) in _KEY_CALLS and node.args and (key := _text(node.args[0])):
                keys.add(key)
            for keyword in node.keywords:
                if keyword.arg == "adapter" and (key := _text(keyword.value)):
                    keys.add(key)
        elif isinstance(node, ast.Compare) and (key := _text(node.left)):
            right = node.comparators[0]
            if isinstance(right, ast.Call) and "adapter_keys" in _callee(right):
                keys.add(key)
    return keys


def installed_by_the_module(tree: ast.AST) -> set[str]:
    """Keys the module installs itself: entry-point mappings it writes (``{"k": "mod:Attr"}``,
    or any mapping handed to a function whose name says it installs), adapter classes it
    defines (``key = "k"``) and the keys it hands conformance as installed
    (``adapter_keys={"k"}``)."""
    keys: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            handed = (
                [*node.args, *(k.value for k in node.keywords)]
                if "install" in _callee(node)
                else []
            )
            handed += [k.value for k in node.keywords if k.arg == "adapter_keys"]
            for value in handed:
                if isinstance(value, ast.Dict):
                    keys |= {t for k in value.keys if (t := _text(k))}
                elif isinstance(value, (ast.Set, ast.List, ast.Tuple)):
                    keys |= {t for e in value.elts if (t := _text(e))}
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                text, target = _text(key), _text(value)
                if text and target and ":" in target:
                    keys.add(text)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id == "key" and (text := _text(node.value)):
                keys.add(text)
    return keys


def test_every_adapter_key_a_test_names_is_declared_installed_or_reserved() -> None:
    # A removed name (ctypes) is refused by ExecutionBackendSpec itself: nobody can take it.
    declared = declared_in_the_repository() | set(REMOVED_EXECUTION_BACKENDS)
    assert {"tvm_ffi", "cython", "cuda_driver"} <= declared
    loose: list[str] = []
    for path in repository_test_modules():
        tree = ast.parse(path.read_text(), filename=str(path))
        allowed = declared | installed_by_the_module(tree)
        for key in sorted(named_keys(tree) - allowed):
            if not key.startswith(RESERVED_ADAPTER_KEY_PREFIX):
                loose.append(f"{path.relative_to(ROOT)}: {key!r}")
    assert loose == [], (
        "tests name adapter keys that no repository package declares and the test does not "
        f"install; a key meant to be absent must start with {RESERVED_ADAPTER_KEY_PREFIX!r}: "
        f"{loose}"
    )


def test_the_check_catches_the_collision_that_happened() -> None:
    tree = ast.parse('with pytest.raises(Error):\n    tl_runtime.get_adapter("opencl_launcher")\n')
    assert named_keys(tree) == {"opencl_launcher"}
    assert "opencl_launcher" not in declared_in_the_repository()
    reserved = ast.parse(f'get_adapter("{RESERVED_ADAPTER_KEY_PREFIX}opencl")')
    assert named_keys(reserved) == {f"{RESERVED_ADAPTER_KEY_PREFIX}opencl"}


@pytest.mark.parametrize("name", ["opencl", "walk", "never_installed", "x"])
def test_no_generated_launcher_key_is_reserved(name: str) -> None:
    assert not launcher_key(name).startswith(RESERVED_ADAPTER_KEY_PREFIX)


def test_the_scaffold_refuses_a_reserved_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Were the default key scheme ever changed to produce a reserved key, generation fails."""
    import tl_backend_api.scaffold as scaffold

    monkeypatch.setattr(
        scaffold, "launcher_key", lambda name: f"{RESERVED_ADAPTER_KEY_PREFIX}{name}"
    )
    with pytest.raises(ScaffoldError, match="reserved for tests"):
        create_backend_package("opencl", tmp_path / "tl-codegen-opencl", kind="ext_dev")
