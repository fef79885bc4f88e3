"""Deployable runtime: artifact format, loading, argument checking and execution adapters.

Imports neither ``tvm`` nor any other ``tl_*`` package; needs ``apache-tvm-ffi`` and
``ml_dtypes`` (which brings numpy; the code still runs without numpy; torch optional). Heavy pieces (tvm-ffi, numpy, adapters) load lazily.

Adapters are found by key through the entry-point group ``tl.adapters``
(``adapter_keys``, ``get_adapter``); a package adds its own by providing the ``Adapter``
protocol and reusing ``ArgumentChecker`` and ``pack_result`` (see docs/deploy.md).
"""

from __future__ import annotations

from typing import Any

from tl_runtime.adapters import ENTRY_POINT_GROUP as ADAPTER_ENTRY_POINT_GROUP
from tl_runtime.adapters import adapter_availability, adapter_keys, get_adapter
from tl_runtime.adapters.base import (
    Adapter,
    Availability,
    CallFunction,
    load_tvm_ffi_library,
    pack_result,
)
from tl_runtime.checking import ArgumentChecker, PreparedCall, TensorView
from tl_runtime.errors import (
    AdapterUnavailableError,
    ArtifactError,
    HashMismatchError,
    InsecureArtifactError,
    NativeBuildError,
    SchemaVersionError,
    SourceOnlyArtifactError,
    StackBudgetError,
)
from tl_runtime.fork_safety import install as _install_fork_safety
from tl_runtime.interrupts import install as _install_interrupt_safety
from tl_runtime.kernel import Kernel, load
from tl_runtime.manifest import (
    DTYPES,
    MANIFEST_NAME,
    SCHEMA_VERSION,
    ArtifactSnapshot,
    FileEntry,
    LaunchArgument,
    LaunchSpec,
    Manifest,
    ParamSpec,
    evaluate_dim_expression,
    read_artifact,
    read_manifest,
    sha256_file,
    verify_files,
    write_artifact,
)
from tl_runtime.thread_team import ThreadPolicy, apply_default_wait_policy, thread_policy

# Before anything the caller imports next can load an OpenMP runtime, which reads
# OMP_WAIT_POLICY once, when it loads (tl_runtime.thread_team says why). Nothing imported
# above loads one.
apply_default_wait_policy()
# A fork while another thread imports (a kernel's first call) must not hang the child.
_install_fork_safety()
# Ctrl-C during a first call's lazy imports, or inside tvm's callbacks into Python, must
# leave the process able to compile again (tl_runtime.interrupts).
_install_interrupt_safety()

__version__ = "0.1.0"


def set_num_threads(count: int) -> None:
    """Set how many threads parallel CPU kernels use (0 = all cores).

    Raises:
        ValueError: ``count`` is not an int >= 0, or is more threads than this machine
            can run (`tl_runtime.thread_team.max_team_threads`).
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
    "ADAPTER_ENTRY_POINT_GROUP",
    "DTYPES",
    "MANIFEST_NAME",
    "SCHEMA_VERSION",
    "Adapter",
    "AdapterUnavailableError",
    "ArgumentChecker",
    "ArtifactError",
    "ArtifactSnapshot",
    "Availability",
    "CallFunction",
    "FileEntry",
    "HashMismatchError",
    "InsecureArtifactError",
    "Kernel",
    "LaunchArgument",
    "LaunchSpec",
    "Manifest",
    "NativeBuildError",
    "ParamSpec",
    "PreparedCall",
    "SchemaVersionError",
    "SourceOnlyArtifactError",
    "StackBudgetError",
    "TensorView",
    "ThreadPolicy",
    "adapter_availability",
    "adapter_keys",
    "evaluate_dim_expression",
    "get_adapter",
    "load",
    "load_tvm_ffi_library",
    "pack_result",
    "read_artifact",
    "read_manifest",
    "set_num_threads",
    "sha256_file",
    "thread_policy",
    "verify_files",
    "write_artifact",
]
