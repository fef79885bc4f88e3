"""The Cython launcher's source: ``_native/launcher.pyx`` and every ``*.pxi`` piece beside it.

``launcher.pyx`` is the module; the pieces are Cython ``include`` files (one job each),
compiled into the same C file. Whatever builds the launcher (the runtime on first use,
tl-runtime's wheel build hook ``hatch_build.py``) reads the pieces once with
`read_launcher_source`, keys what it builds by `launcher_source_digest` of that snapshot
and cythonizes the very bytes it hashed (`write_launcher_source`), so a change to any piece
changes the key, and a built launcher is never matched against sources it was not built
from.

This module imports the standard library only: ``hatch_build.py`` loads it by file path,
in a build environment where tl-runtime is not installed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

LAUNCHER_DIR = Path(__file__).resolve().parent / "_native"
ROOT_NAME = "launcher.pyx"
PIECE_SUFFIX = ".pxi"
#: The piece `write_launcher_source` generates beside the snapshot: the snapshot's digest as
#: the module's ``SOURCE_DIGEST``, so a built launcher says what it was built from. Never
#: part of a snapshot (nor of the installed source).
DIGEST_PIECE = "source_digest.pxi"


def read_launcher_source(directory: Path = LAUNCHER_DIR) -> dict[str, bytes]:
    """Read the launcher's source files from ``directory``, once.

    Returns:
        file name -> content, sorted by name: ``launcher.pyx`` and every ``*.pxi`` file of
        ``directory`` (a piece added later is part of the source without being listed).

    Raises:
        OSError: ``directory`` has no ``launcher.pyx``, or a piece cannot be read.
    """
    names = [
        ROOT_NAME,
        *(path.name for path in directory.glob(f"*{PIECE_SUFFIX}") if path.name != DIGEST_PIECE),
    ]
    return {name: (directory / name).read_bytes() for name in sorted(names)}


def launcher_source_digest(source: Mapping[str, bytes]) -> str:
    """The sha256 (hex) of a source snapshot: every file's name, length and bytes, by name.

    Names and lengths are hashed with the bytes, so renaming a piece or moving text
    from one piece to another changes the digest too.
    """
    digest = hashlib.sha256()
    for name in sorted(source):
        content = source[name]
        digest.update(f"{name}\0{len(content)}\0".encode())
        digest.update(content)
    return digest.hexdigest()


def write_launcher_source(source: Mapping[str, bytes], directory: Path, module_name: str) -> Path:
    """Write a snapshot into ``directory`` for Cython: the root as ``<module_name>.pyx``
    (Cython names the module after the file), the pieces under their own names beside it
    (where its ``include`` statements find them), and `DIGEST_PIECE` holding the snapshot's
    `launcher_source_digest` as ``SOURCE_DIGEST``. Returns the ``.pyx`` path.

    Raises:
        ValueError: the snapshot has no ``launcher.pyx``, or holds a file named `DIGEST_PIECE`.
    """
    if ROOT_NAME not in source or DIGEST_PIECE in source:
        raise ValueError(
            f"write_launcher_source: expected a snapshot holding {ROOT_NAME!r} and no "
            f"{DIGEST_PIECE!r}, got the files {sorted(source)}"
        )
    root = directory / f"{module_name}.pyx"
    for name, content in source.items():
        (root if name == ROOT_NAME else directory / name).write_bytes(content)
    stamp = f'SOURCE_DIGEST = "{launcher_source_digest(source)}"\n'
    (directory / DIGEST_PIECE).write_text(stamp, encoding="ascii")
    return root
