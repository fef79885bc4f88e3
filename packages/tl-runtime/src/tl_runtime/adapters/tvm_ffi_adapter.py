"""The ``tvm_ffi`` adapter: loads the library through tvm-ffi and calls its packed entry."""

from __future__ import annotations

from collections.abc import Callable
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
        """Return the generated fast path (falls back to ``call_checked``).

        numpy arguments take the generated checks; other tensors (torch) take the compiled
        launcher's checks (dtype, shape, strides, device, alignment, autograd, read straight
        through the DLPack C exchange API) and go to tvm-ffi's call, which takes them
        through the same API. Without the compiled launcher (an editable
        install with no C compiler) they take ``call_checked``.
        """
        return build_fast_path(
            self.checker, self.function, self.call_checked, self._make_guarded_call
        )

    def _make_guarded_call(self) -> Callable[[tuple[Any, ...]], Any]:
        """The path for non-numpy args: the compiled launcher checks, then tvm-ffi calls."""
        from tl_runtime.adapters.cython_adapter import launcher_extension, make_launcher
        from tl_runtime.errors import AdapterUnavailableError

        try:
            extension = launcher_extension()
        except AdapterUnavailableError:
            return self.call_checked
        launcher = make_launcher(extension, 0, self.checker, self.call_checked, self.function)
        run: Callable[[tuple[Any, ...]], Any] = launcher.run
        return run
