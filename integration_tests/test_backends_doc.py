"""Every public name docs/backends.md uses is exported where the page says it is.

The page (its walkthrough included) is what a backend team works from without
reading the code, so each name it shows must be importable as shown:

* ``from tl_x import a, b`` in a code block: each name is an attribute of ``tl_x``,
  and of its ``__all__`` when ``tl_x`` is a top-level package;
* a dotted name in backticks (`tl_runtime.evaluate_dim_expression`,
  `tl_backend_api.capabilities.kernel_needs`): the module part imports and the rest
  resolves, and a name read straight off a top-level package is in its ``__all__``;
* a bare name in backticks that tl_backend_api or tl_runtime defines somewhere
  (`Capabilities`, `ArgumentChecker`): exported by one of the two packages, by
  `tl_passes`/`tl_passes.gpu` (`GpuTraits`), or public in a module of the GPU kit
  `tl_backend_api.gpu`, which the page names module by module.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import types
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "backends.md"
_CODE = re.compile(r"^```python[^\n]*\n(?P<code>.*?)^```$", re.M | re.S)
_TICKED = re.compile(r"`([A-Za-z_][\w.]*)(?:\([^`]*\))?`")
#: Packages whose exports a bare name may come from.
_EXPORTERS = ("tl_backend_api", "tl_runtime", "tl_passes", "tl_passes.gpu")


def page() -> str:
    return PAGE.read_text()


def imported_names(text: str) -> list[tuple[str, str]]:
    """``(module, name)`` of every ``from tl_... import ...`` in the page's python blocks."""
    found = []
    for block in _CODE.finditer(text):
        for node in ast.walk(ast.parse(block["code"])):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tl_"):
                found += [(str(node.module), alias.name) for alias in node.names]
    return found


def _resolve(dotted: str) -> tuple[types.ModuleType, list[str]]:
    """The longest importable module prefix of ``dotted`` and the attribute path after it."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            return importlib.import_module(".".join(parts[:cut])), parts[cut:]
        except ModuleNotFoundError:
            continue
    raise AssertionError(f"{dotted}: no module of it imports")


def _exported(package: str) -> set[str]:
    return set(getattr(importlib.import_module(package), "__all__", ()))


def defined_names(package: str) -> set[str]:
    """Every public module-level name of every module of ``package`` (modules excluded)."""
    root = importlib.import_module(package)
    names: set[str] = set()
    for info in pkgutil.walk_packages(root.__path__, f"{package}."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        names |= {
            n
            for n, v in vars(module).items()
            if not n.startswith("_")
            and not isinstance(v, types.ModuleType)
            and str(getattr(v, "__module__", package)).startswith(package)  # not re-imports
        }
    return names


def test_the_page_shows_imports_and_names() -> None:
    text = page()
    assert ("tl_backend_api", "Pipeline") in imported_names(text)
    assert "tl_runtime.evaluate_dim_expression" in _TICKED.findall(text)


@pytest.mark.parametrize(("module", "name"), imported_names(page()))
def test_every_imported_name_is_exported(module: str, name: str) -> None:
    imported = importlib.import_module(module)
    assert hasattr(imported, name), f"from {module} import {name}: no such name"
    if "." not in module:
        assert name in _exported(module), f"{module}.__all__ lacks {name!r}"


def test_every_dotted_name_resolves() -> None:
    problems = []
    for dotted in sorted({t for t in _TICKED.findall(page()) if t.startswith("tl_")}):
        module, rest = _resolve(dotted)
        value: Any = module
        for attribute in rest:
            if not hasattr(value, attribute):
                problems.append(f"{dotted}: {attribute!r} not found")
                break
            value = getattr(value, attribute)
        else:
            top = module.__name__
            if rest and "." not in top and rest[0] not in _exported(top):
                problems.append(f"{dotted}: {top}.__all__ lacks {rest[0]!r}")
    assert problems == []


def test_every_bare_library_name_is_exported() -> None:
    defined = defined_names("tl_backend_api") | defined_names("tl_runtime")
    # The GPU kit is public module by module (`tl_backend_api.gpu.suite.GpuSourceSuite`).
    exported = set().union(*(_exported(p) for p in _EXPORTERS), defined_names("tl_backend_api.gpu"))
    bare = {t.split(".", 1)[0] for t in _TICKED.findall(page()) if not t.startswith("tl_")}
    missing = sorted(name for name in bare & defined if name not in exported)
    assert missing == [], f"docs/backends.md names these without an export: {missing}"
