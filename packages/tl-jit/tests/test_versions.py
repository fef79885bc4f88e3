"""tl_jit.versions: source fingerprints see every edit of a package's Python files."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tl_jit import versions


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "tl_fingerprint_probe"
    (root / "sub").mkdir(parents=True)
    (root / "__pycache__").mkdir()
    (root / "__init__.py").write_text("")
    (root / "a.py").write_text("x = 1\n")
    (root / "sub" / "__init__.py").write_text("")
    (root / "sub" / "b.py").write_text("y = 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    versions.source_fingerprint.cache_clear()
    yield root
    versions.source_fingerprint.cache_clear()


def _fresh(module: str) -> str:
    versions.source_fingerprint.cache_clear()
    return versions.source_fingerprint(module)


def _bump_mtime(path: Path) -> None:
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 5_000_000_000))


def test_package_dir_matches_the_import_system(package: Path) -> None:
    spec = importlib.util.find_spec(package.name)
    assert spec is not None and spec.submodule_search_locations
    assert versions._package_dir(package.name) == next(iter(spec.submodule_search_locations))
    assert versions._package_dir("tl_no_such_package_here") is None
    assert _fresh("tl_no_such_package_here") == "absent"


def test_fingerprint_changes_with_any_python_file(package: Path) -> None:
    before = _fresh(package.name)
    assert _fresh(package.name) == before  # stable
    _bump_mtime(package / "sub" / "b.py")
    nested = _fresh(package.name)
    assert nested != before
    (package / "a.py").write_text("x = 10\n")
    assert _fresh(package.name) != nested
    (package / "sub" / "c.py").write_text("")
    assert _fresh(package.name) not in {before, nested}


def test_fingerprint_ignores_bytecode_and_other_files(package: Path) -> None:
    before = _fresh(package.name)
    (package / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    (package / "notes.txt").write_text("not code")
    assert _fresh(package.name) == before
