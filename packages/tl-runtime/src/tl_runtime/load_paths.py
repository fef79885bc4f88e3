"""Where an artifact's code is loaded from: a path that always names the same content.

The dynamic loader caches libraries by path: a second ``dlopen`` of a path returns the
library already mapped, even when the file at that path was replaced since. Loading an
artifact, replacing it with another one at the same path and loading again would run the
first library under the second manifest (a wrong answer, or a crash when the signatures
differ). So the first time a library path is loaded in a process it is used as is; when
that path later holds a library with other content, the artifact is loaded from a private
copy named by its content instead, and the copy is checked against the manifest again.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from tl_runtime.fork_safety import ForkSafeLock
from tl_runtime.manifest import MANIFEST_NAME, Manifest, verify_files

_lock = ForkSafeLock()
_served: dict[str, str] = {}  # real path of a loaded library -> sha256 of what was loaded
_staging_root: Path | None = None


def _library_sha256(manifest: Manifest) -> str:
    for entry in manifest.files:
        if entry.path == manifest.library:
            return entry.sha256
    # A manifest always lists its library (checked when it is built); be explicit anyway.
    raise ValueError(f"manifest of {manifest.name!r} does not list its library")


def _staging() -> Path:
    """This process's private directory of content-named copies (0700, removed at exit)."""
    global _staging_root
    if _staging_root is None:
        _staging_root = Path(tempfile.mkdtemp(prefix="tl-runtime-load-"))
        atexit.register(shutil.rmtree, _staging_root, ignore_errors=True)
    return _staging_root


def load_directory(directory: Path, manifest: Manifest) -> Path:
    """The directory to load ``manifest``'s code from; call after verifying ``directory``.

    Returns ``directory`` itself unless this process already loaded a library with other
    content from the same path; then a private copy of the artifact's files, in a
    directory named by a digest of their sha256s (so each content gets its own path),
    verified against ``manifest`` after copying.

    Raises:
        ArtifactError: the copy does not match the manifest (the artifact changed while
            it was being loaded).
        HashMismatchError: likewise, for a file whose content changed.
    """
    sha256 = _library_sha256(manifest)
    library = os.path.realpath(directory / manifest.library)
    with _lock:
        served = _served.setdefault(library, sha256)
        if served == sha256:
            return directory
        content = hashlib.sha256(
            repr(sorted((f.path, f.sha256) for f in manifest.files)).encode()
        ).hexdigest()
        target = _staging() / content
        if not target.is_dir():
            partial = Path(tempfile.mkdtemp(dir=_staging(), prefix=".copy-"))
            for entry in manifest.files:
                destination = partial / entry.path
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(directory / entry.path, destination)
            shutil.copyfile(directory / MANIFEST_NAME, partial / MANIFEST_NAME)
            os.rename(partial, target)
        verify_files(target, manifest)
        _served.setdefault(os.path.realpath(target / manifest.library), sha256)
        return target
