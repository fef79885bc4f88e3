"""The Cython launcher's source is ``launcher.pyx`` plus ``include``d pieces: every piece is
hashed into the keys of what is built from it, so no launcher built before an edit to any
piece is loaded after it (cheap: no Cython, no compiler)."""

from __future__ import annotations

import importlib.machinery
import re
import shutil
from pathlib import Path

import pytest

from tl_runtime import launcher_sources
from tl_runtime.adapters import cython_adapter
from tl_runtime.launcher_sources import (
    DIGEST_PIECE,
    LAUNCHER_DIR,
    ROOT_NAME,
    launcher_source_digest,
    read_launcher_source,
    write_launcher_source,
)

INCLUDE = re.compile(rb'^\s*include\s+"([^"]+)"', re.MULTILINE)


def _copy_source(tmp_path: Path) -> Path:
    directory = tmp_path / "_native"
    directory.mkdir()
    for name in read_launcher_source():
        shutil.copyfile(LAUNCHER_DIR / name, directory / name)
    return directory


def test_the_source_is_the_root_and_its_pieces() -> None:
    source = read_launcher_source()
    pieces = sorted(name for name in source if name != ROOT_NAME)
    assert ROOT_NAME in source and len(pieces) >= 2, sorted(source)
    included = {name.decode() for content in source.values() for name in INCLUDE.findall(content)}
    # every include names a hashed piece or the generated digest stamp, and every hashed
    # piece is included
    assert included == {*pieces, DIGEST_PIECE}
    assert not (LAUNCHER_DIR / DIGEST_PIECE).exists()  # the build writes it, never the tree
    for name, content in source.items():
        text = content.decode()
        assert len(text.splitlines()) <= 500, f"{name}: past the ~500-line rule"
        if name != ROOT_NAME:
            assert text.startswith("# Job: "), f"{name}: no header comment saying its job"


@pytest.mark.parametrize("name", sorted(read_launcher_source()))
def test_changing_any_piece_changes_the_digest(tmp_path: Path, name: str) -> None:
    directory = _copy_source(tmp_path)
    before = launcher_source_digest(read_launcher_source(directory))
    assert before == launcher_source_digest(read_launcher_source())  # the copy is the same
    path = directory / name
    path.write_bytes(path.read_bytes() + b"\n# an edit\n")
    assert launcher_source_digest(read_launcher_source(directory)) != before


def test_adding_renaming_or_moving_text_between_pieces_changes_the_digest(
    tmp_path: Path,
) -> None:
    directory = _copy_source(tmp_path)
    digests = {launcher_source_digest(read_launcher_source(directory))}
    (directory / "new_piece.pxi").write_bytes(b"# Job: nothing yet\n")
    digests.add(launcher_source_digest(read_launcher_source(directory)))
    (directory / "new_piece.pxi").rename(directory / "renamed_piece.pxi")
    digests.add(launcher_source_digest(read_launcher_source(directory)))
    # the same bytes in the same order, one byte moved across the boundary of two files
    source = read_launcher_source(directory)
    first, second = sorted(source)[:2]
    moved = dict(source, **{first: source[first][:-1], second: source[first][-1:] + source[second]})
    assert b"".join(moved[n] for n in sorted(moved)) == b"".join(source[n] for n in sorted(source))
    digests.add(launcher_source_digest(moved))
    assert len(digests) == 4


def test_the_snapshot_written_for_cython_is_the_one_hashed(tmp_path: Path) -> None:
    source = read_launcher_source()
    root = write_launcher_source(source, tmp_path, "tl_rt_launcher")
    assert root == tmp_path / "tl_rt_launcher.pyx"
    written = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    stamp = written.pop(DIGEST_PIECE).decode()
    assert written == {
        ("tl_rt_launcher.pyx" if n == ROOT_NAME else n): c for n, c in source.items()
    }
    assert stamp == f'SOURCE_DIGEST = "{launcher_source_digest(source)}"\n'
    with pytest.raises(ValueError, match=r"launcher\.pyx"):
        write_launcher_source({"params.pxi": b""}, tmp_path, "m")
    with pytest.raises(ValueError, match=DIGEST_PIECE):
        write_launcher_source({**source, DIGEST_PIECE: b""}, tmp_path, "m")


def test_build_keys_and_the_built_index_follow_every_piece(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The generated C's key and the index naming the built launcher both change with a
    piece; an index written before the edit is not found after it."""
    from tl_runtime.native_build import record_cached_file

    monkeypatch.setenv("TL_RUNTIME_CACHE_DIR", str(tmp_path / "cache"))
    directory = _copy_source(tmp_path)
    monkeypatch.setattr(
        cython_adapter, "read_launcher_source", lambda: read_launcher_source(directory)
    )
    before = launcher_source_digest(read_launcher_source(directory))
    from tl_runtime.native_build import cache_dir

    built = cache_dir() / "tl_rt_launcher-fake.so"
    built.write_bytes(b"not really a launcher")
    record_cached_file(built)
    cython_adapter._record_built(built, before)
    assert cython_adapter._previously_built() == built
    for name in sorted(read_launcher_source(directory)):
        path = directory / name
        original = path.read_bytes()
        path.write_bytes(original.replace(b"\n", b"\n\n", 1))
        after = launcher_source_digest(read_launcher_source(directory))
        assert cython_adapter._build_key(after, "3.0") != cython_adapter._build_key(before, "3.0")
        assert cython_adapter._built_index(after) != cython_adapter._built_index(before)
        assert cython_adapter._previously_built() is None, f"stale launcher after editing {name}"
        path.write_bytes(original)
    assert cython_adapter._previously_built() == built


def test_a_shipped_launcher_is_ignored_once_any_piece_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = _copy_source(tmp_path)
    monkeypatch.setattr(cython_adapter, "LAUNCHER_DIR", directory)
    shipped = directory / f"tl_rt_launcher{importlib.machinery.EXTENSION_SUFFIXES[0]}"
    shipped.write_bytes(b"")
    record = directory / "tl_rt_launcher.sha256"
    record.write_text(launcher_source_digest(read_launcher_source(directory)) + "\n")
    assert cython_adapter.shipped_launcher() == shipped
    piece = next(name for name in sorted(read_launcher_source(directory)) if name != ROOT_NAME)
    (directory / piece).write_bytes((directory / piece).read_bytes() + b"\n")
    assert cython_adapter.shipped_launcher() is None


def test_the_wheel_hook_records_the_runtimes_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``hatch_build.py`` compiles the snapshot it hashes, with ``launcher_sources`` itself
    (loaded by path), so the record a built wheel ships matches the installed source."""
    pytest.importorskip("hatchling")
    package = Path(launcher_sources.__file__).parents[2]
    monkeypatch.syspath_prepend(str(package))
    import hatch_build

    compiled: list[dict[str, bytes]] = []

    def fake_build(sources: object, snapshot: dict[str, bytes], work: Path) -> Path:
        compiled.append(snapshot)
        (work / "tl_rt_launcher.so").write_bytes(b"")
        return work / "tl_rt_launcher.so"

    def fake_helper(source: Path, work: Path) -> Path:
        (work / "helper.so").write_bytes(b"")
        return work / "helper.so"

    monkeypatch.setattr(hatch_build, "_build", fake_build)
    monkeypatch.setattr(hatch_build, "_build_helper", fake_helper)
    monkeypatch.delenv("TL_RUNTIME_PURE_WHEEL", raising=False)
    hook = hatch_build.LauncherBuildHook(str(package), {}, None, None, str(tmp_path), "wheel")
    build_data: dict[str, object] = {}
    hook.initialize("standard", build_data)
    try:
        assert compiled == [read_launcher_source()]
        record = Path(hook._work) / "tl_rt_launcher.sha256"
        assert record.read_text().strip() == launcher_source_digest(read_launcher_source())
        assert (
            build_data["force_include"][str(record)] == "tl_runtime/_native/tl_rt_launcher.sha256"
        )  # type: ignore[index]
    finally:
        hook.finalize("standard", build_data, "")
