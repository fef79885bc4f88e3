"""The ``tvm_ffi`` adapter: loads the library through tvm-ffi and calls its packed entry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tl_runtime.adapters.base import Availability, CallFunction, load_tvm_ffi_library, pack_result
from tl_runtime.adapters.fast_path import build_fast_path
from tl_runtime.checking import ArgumentChecker
from tl_runtime.manifest import Manifest


class TvmFfiAdapter:
    """Calls the packed entry (``int f(void*, const TVMFFIAny*, int32_t, TVMFFIAny*)``) via tvm-ffi.

    Args:
        manifest: the artifact's manifest.
        directory: the artifact directory.
        checker: the kernel's argument checker.

    Raises:
        ArtifactError: the library cannot be loaded or lacks the entry.
    """

    key = "tvm_ffi"

    def __init__(self, manifest: Manifest, directory: Path, checker: ArgumentChecker) -> None:
        self.manifest = manifest
        self.checker = checker
        self.module, self.function = load_tvm_ffi_library(manifest, directory)

    @classmethod
    def probe(cls) -> Availability:
        """Available wherever tvm-ffi imports (it is tl-runtime's one hard dependency)."""
        try:
            import tvm_ffi  # noqa: F401
        except ImportError as exc:
            return Availability(False, f"apache-tvm-ffi is not importable: {exc}")
        return Availability(True)

    def call_checked(self, args: tuple[Any, ...]) -> Any:
        """The complete path: full checks and copies, then the call."""
        prepared = self.checker.prepare(args)
        self.function(*prepared.args)
        return pack_result(prepared.outputs)

    def make_call(self) -> CallFunction:
        """Return the generated fast path (falls back to ``call_checked``)."""
        allocate = lambda dtype, shape: self.checker.allocate(dtype, shape, None)  # noqa: E731
        return build_fast_path(self.checker, self.function, self.call_checked, allocate)
