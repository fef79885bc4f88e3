"""A library cut short is refused before the dynamic loader maps it (it died with SIGBUS).

An export interrupted, or a disk that filled, leaves a truncated library; hashing the
directory again (``tl_runtime.write_artifact``) makes every hash match, and ``dlopen`` then
touched bytes past the end of the file: the process died with SIGBUS, which no Python
code can catch. ``tl_runtime.library_bounds`` reads the ELF headers first.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

import tl_runtime
from tl_runtime.library_bounds import library_problem


def _library(artifact: Path) -> bytes:
    manifest = tl_runtime.read_manifest(artifact, verify=False)
    return (artifact / manifest.library).read_bytes()


def test_a_whole_library_passes_and_every_cut_is_named(artifact: Callable[..., Path]) -> None:
    data = _library(artifact("vadd"))
    assert library_problem(data) is None
    for size in [0, 3, 20, 63, 100, len(data) // 4, len(data) // 2, len(data) - 1]:
        if size < 4:
            assert library_problem(data[:size]) is None  # not even ELF: the loader says
            continue
        problem = library_problem(data[:size])
        assert problem is not None and f"{size} bytes" in problem, (size, problem)


def test_other_formats_are_left_to_the_loader() -> None:
    assert library_problem(b"\xcf\xfa\xed\xfe" + bytes(60)) is None  # Mach-O
    assert library_problem(b"MZ" + bytes(100)) is None  # PE
    assert library_problem(b"\x7fELF\x03\x01" + bytes(60)) is not None  # unknown class


@pytest.mark.parametrize("cut", [0.1, 0.5, 0.95])
def test_a_cut_library_rehashed_into_its_artifact_is_refused_not_loaded(
    artifact_copy: Callable[..., Path], adapter: str, cut: float, tmp_path: Path
) -> None:
    directory = artifact_copy("vadd")
    manifest = tl_runtime.read_manifest(directory, verify=False)
    library = directory / manifest.library
    data = library.read_bytes()
    library.write_bytes(data[: int(len(data) * cut)])
    tl_runtime.write_artifact(directory, manifest, [f.path for f in manifest.files])
    # In a child: before the check, this load killed the process.
    code = textwrap.dedent(
        f"""
        import tl_runtime
        try:
            tl_runtime.load({str(directory)!r}, adapter={adapter!r})
        except tl_runtime.ArtifactError as error:
            print("refused:", error)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert f"library {manifest.library!r} cannot be loaded" in done.stdout, done.stdout
    assert "cut short" in done.stdout or "past its" in done.stdout
