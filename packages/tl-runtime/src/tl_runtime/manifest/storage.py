"""Artifacts on disk: reading ``manifest.json``, checking file hashes, writing artifacts."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tl_runtime.errors import ArtifactError, HashMismatchError
from tl_runtime.manifest.document import Manifest
from tl_runtime.manifest.fields import MANIFEST_NAME
from tl_runtime.manifest.params import FileEntry


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Return the lowercase hex sha256 of the file at ``path``."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_manifest(directory: str | os.PathLike[str], *, verify: bool = True) -> Manifest:
    """Read and validate ``<directory>/manifest.json``.

    Args:
        directory: the artifact directory.
        verify: also check that every listed file exists and has its recorded sha256.

    Returns:
        The validated Manifest.

    Raises:
        ArtifactError: no manifest, malformed manifest, or a listed file is missing.
        SchemaVersionError: the schema version is not ``SCHEMA_VERSION``.
        HashMismatchError: a file's sha256 differs from the manifest (the message names it).
    """
    root = Path(directory)
    path = root / MANIFEST_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ArtifactError(f"{root} is not an artifact: {MANIFEST_NAME} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ArtifactError(f"cannot read {path}: {exc}") from None
    manifest = Manifest.loads(text)
    if verify:
        verify_files(root, manifest)
    return manifest


def verify_files(directory: str | os.PathLike[str], manifest: Manifest) -> None:
    """Check that every file of ``manifest`` exists under ``directory`` with its sha256.

    Raises:
        ArtifactError: a file is missing.
        HashMismatchError: a file's content differs (names the file and both hashes).
    """
    root = Path(directory)
    for entry in manifest.files:
        file_path = root / entry.path
        if not file_path.is_file():
            raise ArtifactError(f"artifact file {entry.path!r} listed in the manifest is missing")
        actual = sha256_file(file_path)
        if actual != entry.sha256:
            raise HashMismatchError(
                f"artifact file {entry.path!r} has sha256 {actual}, the manifest records "
                f"{entry.sha256}: the file was modified or truncated after export"
            )


def write_artifact(
    directory: str | os.PathLike[str],
    manifest: Manifest,
    files: Mapping[str, str | os.PathLike[str] | bytes] | Sequence[str] = (),
    *,
    roles: Mapping[str, str] | None = None,
) -> Path:
    """Write an artifact: copy ``files`` into ``directory``, hash them, write ``manifest.json``.

    Args:
        directory: target directory (created if missing).
        manifest: the manifest to write; its ``files`` entries are replaced by fresh ones
            computed here (path, sha256, role).
        files: either a mapping ``{relative path: source path or bytes}`` of files to place in the
            directory, or a sequence of relative paths already present in it.
        roles: role per relative path (``library``/``source``/``other``); the manifest's
            ``library`` gets ``library`` by default, existing entries keep their role.

    Returns:
        The artifact directory as a Path.

    Raises:
        ArtifactError: a path escapes the directory, a file is missing, or the resulting
            manifest is invalid (e.g. its ``library`` is not among the files).
    """
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    known_roles = {f.path: f.role for f in manifest.files}
    known_roles.setdefault(manifest.library, "library")
    known_roles.update(roles or {})
    names: list[str] = []
    if isinstance(files, Mapping):
        for rel, src in files.items():
            dest = root / rel
            FileEntry(path=rel, sha256="0" * 64)  # validates the relative path
            dest.parent.mkdir(parents=True, exist_ok=True)
            data = src if isinstance(src, bytes) else Path(src).read_bytes()
            _atomic_write(dest, data)
            names.append(rel)
    else:
        names = list(files)
    if not names:
        names = [f.path for f in manifest.files] or [manifest.library]
    entries = []
    for rel in names:
        if not (root / rel).is_file():
            raise ArtifactError(f"write_artifact: file {rel!r} not found in {root}")
        entries.append(
            FileEntry(path=rel, sha256=sha256_file(root / rel), role=known_roles.get(rel, "other"))
        )
    final = Manifest(**{**_fields(manifest), "files": tuple(entries)})
    _atomic_write(root / MANIFEST_NAME, final.dumps().encode("utf-8"))
    return root


def _fields(manifest: Manifest) -> dict[str, Any]:
    return {name: getattr(manifest, name) for name in manifest.__dataclass_fields__}


def _atomic_write(dest: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
