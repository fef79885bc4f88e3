"""Artifacts on disk: reading ``manifest.json``, checking file hashes, writing artifacts.

Integrity, checked by ``read_manifest(verify=True)`` before any code is loaded: the
manifest carries ``manifest_sha256``, the sha256 of its own canonical JSON without that
field, so an edit of any field (an output's shape, a file's recorded hash) is detected;
every listed file has its recorded sha256; no path inside the artifact (the manifest, a
listed file, a directory on the way to one) is a symlink, so nothing is read from outside
the artifact directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tl_runtime.errors import ArtifactError, HashMismatchError
from tl_runtime.manifest.document import Manifest
from tl_runtime.manifest.fields import MANIFEST_NAME
from tl_runtime.manifest.params import FileEntry

MANIFEST_DIGEST_FIELD = "manifest_sha256"
"""The top-level manifest field holding the sha256 of the rest of the manifest."""


def manifest_digest(data: Mapping[str, Any]) -> str:
    """The sha256 of the manifest JSON object ``data`` without its digest field.

    Computed over a canonical rendering (sorted keys, no whitespace), so it does not depend
    on how the file was indented.
    """
    body = {k: v for k, v in data.items() if k != MANIFEST_DIGEST_FIELD}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Return the lowercase hex sha256 of the file at ``path``."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def parse_manifest(content: bytes, path: Path) -> tuple[dict[str, Any], Manifest]:
    """The JSON object and the validated `Manifest` of the manifest bytes ``content``
    (read from ``path``, named in errors).

    Raises:
        ArtifactError: not UTF-8, not JSON, nested too deeply, or an invalid field.
        SchemaVersionError: the schema version is not ``SCHEMA_VERSION``.
    """
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ArtifactError(f"cannot read {path}: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArtifactError(f"{MANIFEST_NAME} is not valid JSON: {exc}") from None
    except ValueError as exc:  # an integer past Python's digit limit
        raise ArtifactError(f"{path}: a number no manifest field can hold ({exc})") from None
    except RecursionError:
        raise ArtifactError(
            f"{path}: nested too deeply to be a manifest (a manifest is a few levels deep)"
        ) from None
    try:
        manifest = Manifest.from_json(data)
    except RecursionError:
        raise ArtifactError(
            f"{path}: nested too deeply to be a manifest (a manifest is a few levels deep)"
        ) from None
    return data, manifest


def check_manifest_digest(data: Mapping[str, Any], path: Path) -> None:
    """Check the manifest object ``data`` against its own ``manifest_sha256``.

    Raises:
        ArtifactError: the field is absent (re-export the artifact).
        HashMismatchError: the content differs from the recorded digest.
    """
    recorded = data.get(MANIFEST_DIGEST_FIELD)
    if recorded is None:
        raise ArtifactError(
            f"{path} has no {MANIFEST_DIGEST_FIELD}: it was not written by this tl-runtime's "
            "write_artifact (or the field was removed); re-export the artifact"
        )
    actual = manifest_digest(data)
    if recorded != actual:
        raise HashMismatchError(
            f"{path}: its content has sha256 {actual}, its {MANIFEST_DIGEST_FIELD} records "
            f"{recorded!r}: the manifest was modified after export"
        )


def read_manifest(directory: str | os.PathLike[str], *, verify: bool = True) -> Manifest:
    """Read and validate ``<directory>/manifest.json`` (through `read_artifact`: one
    directory descriptor, no link followed, special files refused before they are opened).

    Args:
        directory: the artifact directory.
        verify: also check the manifest's digest, that every listed file exists and has
            its recorded sha256, and that the directory is not writable by every user.

    Returns:
        The validated Manifest.

    Raises:
        ArtifactError: no manifest, malformed or too deeply nested manifest, a listed file
            is missing, ``manifest.json`` (or a listed file) is a symlink or not a regular
            file, or (``verify``) the manifest has no ``manifest_sha256``.
        InsecureArtifactError: (``verify``) the directory is writable by every user.
        SchemaVersionError: the schema version is not ``SCHEMA_VERSION``.
        HashMismatchError: (``verify``) a file's sha256 differs from the manifest, or the
            manifest's own content differs from its ``manifest_sha256`` (names the file).
        TypeError: ``directory`` is not a str or path-like object (the message names
            ``directory`` and what came).
    """
    from tl_runtime.manifest.snapshot import artifact_directory, read_artifact

    return read_artifact(artifact_directory("read_manifest", directory), verify=verify).manifest


def verify_files(directory: str | os.PathLike[str], manifest: Manifest) -> None:
    """Check that every file of ``manifest`` exists under ``directory`` with its sha256.

    Raises:
        ArtifactError: a file is missing, is not a regular file, or it or a directory on
            its path is a symlink.
        HashMismatchError: a file's content differs (names the file and both hashes).
        TypeError: ``directory`` is not a str or path-like object (names the parameter).
    """
    from tl_runtime.manifest.snapshot import artifact_directory, read_regular

    root = artifact_directory("verify_files", directory)
    root_fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        for entry in manifest.files:
            actual = hashlib.sha256(read_regular(root_fd, entry.path)).hexdigest()
            if actual != entry.sha256:
                raise HashMismatchError(
                    f"artifact file {entry.path!r} has sha256 {actual}, the manifest records "
                    f"{entry.sha256}: the file was modified or truncated after export"
                )
    finally:
        os.close(root_fd)


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
    document = final.to_json()
    document[MANIFEST_DIGEST_FIELD] = manifest_digest(document)
    _atomic_write(root / MANIFEST_NAME, (json.dumps(document, indent=2) + "\n").encode("utf-8"))
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
