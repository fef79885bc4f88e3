"""Manifest field vocabulary: constants and the checks of single JSON values.

Every malformed value raises ``ArtifactError`` naming the field, the expectation and
what came (``fail``).
"""

from __future__ import annotations

import re
from typing import Any

from tl_runtime.dtypes import DTYPE_TABLE
from tl_runtime.errors import ArtifactError

SCHEMA_VERSION = 2
"""The manifest schema version this runtime writes and reads (2: every device kernel's
launch in ``launches``; 1 kept only the first and left the rest to a side file)."""

MANIFEST_NAME = "manifest.json"

DTYPES: frozenset[str] = frozenset(DTYPE_TABLE)
"""Element types a parameter may declare (``tl_runtime.dtypes.DTYPE_TABLE``; its aliases,
``DTYPE_ALIASES``, are accepted too)."""

PARAM_KINDS = ("tensor", "scalar")
PARAM_ROLES = ("input", "output", "inout")
"""``input``: only read; ``output``: written (allocated by the runtime when in ``out_idx``,
else passed by the caller); ``inout``: written by the kernel and passed by the caller
(updated in place, never allocated)."""

WRITTEN_ROLES = frozenset({"output", "inout"})
"""Roles of the parameters a kernel writes: the caller's array itself must be passed."""

MAX_ALIGNMENT = 1 << 16
"""The largest ``alignment`` a manifest may declare (64 KiB; code never assumes more)."""

MAX_EXTENT = (1 << 63) - 1
"""The largest dim, stride or total byte size a manifest may declare: what an int64
(numpy's and DLPack's size type) holds. Larger values can never describe a real array."""

DEFAULT_ALIGNMENT = 64
"""The data alignment (bytes) of a tensor param whose manifest entry has no ``alignment``
(what the generated code assumed before manifests recorded it)."""
FILE_ROLES = ("library", "source", "other")

DLPACK_DEVICE_TYPES: frozenset[int] = frozenset(range(1, 18)) - {5, 6}
"""The DLPack ``DLDeviceType`` codes a manifest may name in ``argument_device_types``
(1 is host memory; docs/deploy.md lists what each code means)."""

DEFAULT_ARGUMENT_DEVICE_TYPES: tuple[int, ...] = (1,)
"""What a manifest without ``argument_device_types`` accepts: host (CPU) arrays only."""

INDEX_BITS = (32, 64)
"""The element-index widths a manifest may declare in ``index_bits``."""

DEFAULT_INDEX_BITS = 32
"""The index width of a manifest without ``index_bits``: 32 (tl-ir's symbolic dims are int32)."""

MAX_STACK_BYTES = 1 << 40
"""The largest ``stack_bytes`` a manifest may declare (a sanity bound: no thread has 1 TiB)."""

# \A...\Z, not ^...$: ``$`` also matches before a final newline ("main\n" passed).
IDENTIFIER = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")
"""A C identifier (param names, symbolic dim names, entry symbols)."""
HEX64 = re.compile(r"\A[0-9a-f]{64}\Z")
"""A sha256 in lowercase hex."""

Dim = int | str
"""A dimension: a non-negative int, or the name of a symbolic dim bound at call time."""

JSONValue = Any
"""A JSON-compatible value (kept ``Any`` because JSON is recursive)."""


def fail(where: str, expected: str, got: object) -> ArtifactError:
    """The ``ArtifactError`` for manifest field ``where``: ``expected`` ... ``got``."""
    return ArtifactError(f"manifest {where}: expected {expected}, got {got!r}")


def check_dim(where: str, dim: object) -> Dim:
    """Return ``dim`` if it is an int >= 0 or a symbolic dim name; else raise ArtifactError."""
    if isinstance(dim, bool) or not isinstance(dim, int | str):
        raise fail(where, "an int >= 0 or a symbolic dim name", dim)
    if isinstance(dim, int) and not 0 <= dim <= MAX_EXTENT:
        raise fail(where, "an int in [0, 2**63 - 1] or a symbolic dim name", dim)
    if isinstance(dim, str) and not IDENTIFIER.match(dim):
        raise fail(where, "a symbolic dim name (identifier)", dim)
    return dim


def as_mapping(where: str, value: object) -> dict[str, JSONValue]:
    """Return ``value`` if it is a JSON object (dict); else raise ArtifactError."""
    if not isinstance(value, dict):
        raise fail(where, "a JSON object", value)
    return value


def as_str(where: str, value: object) -> str:
    """Return ``value`` if it is a string; else raise ArtifactError."""
    if not isinstance(value, str):
        raise fail(where, "a string", value)
    return value
