"""Whether a shared library's bytes are whole enough for the dynamic loader to map safely.

The loader maps an ELF library's segments by the offsets its headers give and touches
them; a file cut short (an export interrupted, a disk that filled) whose hashes were taken
afterwards (``tl_runtime.write_artifact`` hashes what is on disk) passes every hash check,
and ``dlopen`` then reads past the end of the mapping: the process dies with SIGBUS, which
no Python code can catch. `library_problem` reads the headers and says what is out of
bounds before anything is loaded. Formats other than ELF (Mach-O, PE) are not read here.
"""

from __future__ import annotations

import struct
from pathlib import Path

from tl_runtime.errors import ArtifactError

__all__ = ["library_problem", "refuse_incomplete_library"]

_ELF_MAGIC = b"\x7fELF"
_SHT_NOBITS = 8


def library_problem(data: bytes) -> str | None:
    """Why ``data`` cannot be a complete ELF shared library (a sentence), or None.

    Checked: the ELF header is whole; the program and section header tables lie inside
    the file; every segment's file bytes and every section's (but ``SHT_NOBITS``) lie
    inside the file. Not ELF: None (the loader's own checks apply).
    """
    if data[:4] != _ELF_MAGIC:
        return None
    size = len(data)
    if size < 16:
        return f"it holds {size} bytes, fewer than an ELF identification"
    wide = {1: False, 2: True}.get(data[4])
    order = {1: "<", 2: ">"}.get(data[5])
    if wide is None or order is None:
        return f"its ELF class {data[4]} or byte order {data[5]} is unknown"
    header = struct.Struct(order + ("HHIQQQIHHHHHH" if wide else "HHIIIIIHHHHHH"))
    if size < 16 + header.size:
        return f"it holds {size} bytes, fewer than its ELF header"
    fields = header.unpack_from(data, 16)
    phoff, shoff = fields[4], fields[5]
    phentsize, phnum, shentsize, shnum = fields[8], fields[9], fields[10], fields[11]
    segment = struct.Struct(order + ("IIQQQQQQ" if wide else "IIIIIIII"))
    section = struct.Struct(order + ("IIQQQQIIQQ" if wide else "IIIIIIIIII"))
    if phnum:
        if phentsize < segment.size or phoff + phnum * phentsize > size:
            return f"its program headers end past its {size} bytes"
        for index in range(phnum):
            entry = segment.unpack_from(data, phoff + index * phentsize)
            offset, filesz = (entry[2], entry[5]) if wide else (entry[1], entry[4])
            if offset + filesz > size:
                return (
                    f"its segment {index} spans bytes {offset}..{offset + filesz}, past its "
                    f"{size} bytes (the file was cut short)"
                )
    if shoff and shnum:
        if shentsize < section.size or shoff + shnum * shentsize > size:
            return f"its section headers end past its {size} bytes (the file was cut short)"
        for index in range(shnum):
            entry = section.unpack_from(data, shoff + index * shentsize)
            kind, offset, length = entry[1], entry[4], entry[5]
            if kind != _SHT_NOBITS and offset + length > size:
                return (
                    f"its section {index} spans bytes {offset}..{offset + length}, past its "
                    f"{size} bytes (the file was cut short)"
                )
    return None


def refuse_incomplete_library(library: str, path: Path) -> None:
    """For adapters that hand the host's dynamic loader the file at ``path`` (the private
    copy of artifact file ``library``): refuse it if `library_problem` finds one. (A
    library a device driver loads from bytes is its own adapter's to check.)

    Raises:
        ArtifactError: naming the library and what lies out of bounds.
    """
    problem = library_problem(path.read_bytes())
    if problem is not None:
        raise ArtifactError(f"library {library!r} cannot be loaded: {problem}")
