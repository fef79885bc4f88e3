"""build_shared_library: a cached helper is found without spawning the compiler."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tl_runtime import native_build

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")


def _fake_compiler(directory: Path, version: str) -> Path:
    """A `cc` wrapper that prints ``version`` for --version and compiles with the real cc."""
    real = shutil.which("cc")
    script = directory / "fakecc"
    script.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = "--version" ]; then echo "{version}"; '
        f'echo called >> "{directory}/version-calls"; exit 0; fi\n'
        f'exec "{real}" "$@"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def _version_calls(directory: Path) -> int:
    try:
        return len((directory / "version-calls").read_text().splitlines())
    except FileNotFoundError:
        return 0


@pytest.fixture
def helper_source(tmp_path: Path) -> Path:
    source = tmp_path / "helper.c"
    source.write_text("int tl_test_answer(void) { return 42; }\n")
    return source


def test_cached_helper_asks_the_compiler_its_version_once(
    tmp_path: Path, helper_source: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TL_RUNTIME_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TL_RUNTIME_CC", str(_fake_compiler(tmp_path, "fakecc 1.0")))
    first = native_build.build_shared_library("tl_test_helper", [helper_source], [["-O1"]])
    assert _version_calls(tmp_path) == 1

    def no_spawn(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a cached helper spawned a process: {args}")

    monkeypatch.setattr(subprocess, "run", no_spawn)
    again = native_build.build_shared_library("tl_test_helper", [helper_source], [["-O1"]])
    assert again == first
    assert _version_calls(tmp_path) == 1


def test_a_replaced_compiler_is_asked_again_and_rebuilds(
    tmp_path: Path, helper_source: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TL_RUNTIME_CACHE_DIR", str(tmp_path / "cache"))
    compiler = _fake_compiler(tmp_path, "fakecc 1.0")
    monkeypatch.setenv("TL_RUNTIME_CC", str(compiler))
    first = native_build.build_shared_library("tl_test_helper", [helper_source], [["-O1"]])
    # An upgrade replaces the binary: new content (size) and a new mtime.
    _fake_compiler(tmp_path, "fakecc 2.0 (upgraded)")
    info = compiler.stat()
    os.utime(compiler, ns=(info.st_atime_ns, info.st_mtime_ns + 10_000_000_000))
    second = native_build.build_shared_library("tl_test_helper", [helper_source], [["-O1"]])
    assert _version_calls(tmp_path) == 2
    assert second != first
    assert second.is_file()
