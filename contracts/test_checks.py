"""The contract-module checks themselves catch a missing module, part or annotation."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tl_backend_api import list_backends

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contracts import checks
from contracts.checks import (
    annotation_names,
    backend_packages,
    contract_problems,
    import_contract_module,
)

BACKENDS = list_backends()


def _module_from(path: Path, text: str) -> ModuleType:
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(f"_contract_probe_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def backend_and_package() -> tuple[object, str]:
    if not BACKENDS:
        pytest.skip("no backend installed")
    backend = BACKENDS[0]
    (package,) = backend_packages([backend])[backend.name]
    return backend, package


def test_a_package_without_a_contract_module_is_named() -> None:
    with pytest.raises(AssertionError, match=r"'tl_ir' has no tl_ir\.contract module"):
        import_contract_module("tl_ir")


def test_a_contract_naming_only_the_descriptor_misses_the_other_parts(
    tmp_path: Path, backend_and_package: tuple[object, str]
) -> None:
    backend, package = backend_and_package
    module = _module_from(
        tmp_path / "partial.py",
        "from tl_backend_api import Backend\n"
        f"from {package}.backend import BACKEND\n"
        "descriptor: Backend = BACKEND\n",
    )
    problems = contract_problems(backend, module)  # type: ignore[arg-type]
    assert "pipelines: no assignment annotated `: PassPipeline`" in problems
    assert "device_codegens: no assignment annotated `: DeviceCodegen`" in problems
    assert any(p.startswith("pipelines: ") and "is not imported" in p for p in problems)
    assert not any(p.startswith("descriptor:") for p in problems)


def test_a_contract_annotating_without_importing_the_part_is_refused(
    tmp_path: Path, backend_and_package: tuple[object, str]
) -> None:
    backend, _ = backend_and_package
    module = _module_from(
        tmp_path / "annotations_only.py",
        "from __future__ import annotations\n"
        "def check_types() -> None:\n"
        "    descriptor: Backend\n"
        "    pipeline: PassPipeline\n"
        "    device_codegen: DeviceCodegen\n",
    )
    assert annotation_names(module) >= {"Backend", "PassPipeline", "DeviceCodegen"}
    problems = contract_problems(backend, module)  # type: ignore[arg-type]
    assert any(p.startswith("descriptor: ") and "is not imported" in p for p in problems)


class _FakeEntryPoint:
    def __init__(self, name: str, value: str, loaded: object) -> None:
        self.name, self.value, self._loaded = name, value, loaded

    def load(self) -> object:
        return self._loaded


def test_a_launcher_the_package_publishes_must_be_in_its_contract(
    tmp_path: Path, backend_and_package: tuple[object, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    backend, package = backend_and_package
    adapter_key = backend.execution_backends[0].adapter  # type: ignore[attr-defined]

    class Launcher:
        key = adapter_key

    published = [_FakeEntryPoint(adapter_key, f"{package}.launcher:Launcher", Launcher)]
    monkeypatch.setattr(
        "importlib.metadata.entry_points",
        lambda group: published if group == checks.ADAPTER_GROUP else [],
    )
    module = _module_from(tmp_path / "no_launcher.py", "x = 1\n")
    problems = contract_problems(backend, module, package)  # type: ignore[arg-type]
    assert "launchers: no assignment annotated `: Adapter`" in problems
    assert any(p.startswith("launchers: ") and "is not imported" in p for p in problems)
