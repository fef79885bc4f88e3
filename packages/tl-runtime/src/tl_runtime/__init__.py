"""Deployable runtime: artifact format, loading, argument checking and execution adapters.

Imports neither ``tvm`` nor any other ``tl_*`` package; needs only ``apache-tvm-ffi``
(numpy optional, torch optional). Heavy pieces (tvm-ffi, numpy, adapters) load lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tl_runtime.errors import (
    AdapterUnavailableError,
    ArtifactError,
    HashMismatchError,
    NativeBuildError,
    SchemaVersionError,
)
from tl_runtime.kernel import Kernel, load
from tl_runtime.manifest import (
    DTYPES,
    MANIFEST_NAME,
    SCHEMA_VERSION,
    FileEntry,
    LaunchSpec,
    Manifest,
    ParamSpec,
    read_manifest,
    sha256_file,
    verify_files,
    write_artifact,
)

if TYPE_CHECKING:
    from tl_runtime.adapters.base import Availability

__version__ = "0.1.0"

ADAPTER_KEYS = ("tvm_ffi", "cython", "nvrtc", "torch")
"""The adapter keys this runtime declares (no ``ctypes``)."""


def adapter_availability(key: str) -> Availability:
    """Return whether adapter ``key`` can run here; ``.reason`` says why not."""
    from tl_runtime.adapters import adapter_availability as probe

    return probe(key)


def set_num_threads(count: int) -> None:
    """Set how many threads parallel CPU kernels use (0 = all cores).

    Raises:
        ValueError: ``count`` is not an int >= 0.
        RuntimeError: parallel kernels are unavailable (no C compiler to build the helper).
    """
    from tl_runtime.context import set_num_threads as apply

    apply(count)


def __getattr__(name: str) -> Any:
    if name == "ALIGNMENT":
        from tl_runtime.checking import ALIGNMENT

        return ALIGNMENT
    raise AttributeError(f"module 'tl_runtime' has no attribute {name!r}")


__all__ = [
    "ADAPTER_KEYS",
    "DTYPES",
    "MANIFEST_NAME",
    "SCHEMA_VERSION",
    "AdapterUnavailableError",
    "ArtifactError",
    "FileEntry",
    "HashMismatchError",
    "Kernel",
    "LaunchSpec",
    "Manifest",
    "NativeBuildError",
    "ParamSpec",
    "SchemaVersionError",
    "adapter_availability",
    "load",
    "read_manifest",
    "set_num_threads",
    "sha256_file",
    "verify_files",
    "write_artifact",
]
