"""The ``cython`` adapter: a Cython-compiled launcher that calls the kernel's C entry directly.

The launcher (``_native/launcher.pyx`` and the ``*.pxi`` pieces it includes, see
`tl_runtime.launcher_sources`) ships compiled in tl-runtime's built wheel; in an editable
install it is compiled on first use into the per-user cache (Cython + the system C compiler,
under a file lock), keyed by the digest of every piece; ``$TL_RUNTIME_LAUNCHER`` (a path to
a built extension) overrides both. It reads data pointers straight
from the buffer protocol (numpy) or DLPack capsules, builds the packed argument array in C
and calls ``__tvm_ffi_<entry>`` of the library that tvm-ffi loaded (so the library's context
slots are already filled).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from tl_runtime.adapters.base import Availability, CallFunction, pack_result
from tl_runtime.call_plan import launcher_specs
from tl_runtime.checking import ArgumentChecker, outputs_follow
from tl_runtime.errors import AdapterUnavailableError, ArtifactError, NativeBuildError
from tl_runtime.fork_safety import ForkSafeLock
from tl_runtime.launcher_sources import (
    LAUNCHER_DIR,
    launcher_source_digest,
    read_launcher_source,
    write_launcher_source,
)
from tl_runtime.library_bounds import refuse_incomplete_library
from tl_runtime.manifest import Manifest
from tl_runtime.tensor_views import in_place_write_marker, mark_written_in_place
from tl_runtime.torch_negative_bit import negative_bit_layout
from tl_runtime.torch_version_count import version_count_layout
from tl_runtime.tvm_ffi_paths import libtvm_ffi_path

_MODULE_NAME = "tl_rt_launcher"

_lock = ForkSafeLock()
_extension: ModuleType | None = None


def _include_dirs() -> list[str]:
    import sysconfig  # the build path only: a cache hit loads the built launcher

    dirs = [sysconfig.get_paths()["include"], sysconfig.get_paths()["platinclude"]]
    # tvm-ffi's headers (dlpack's included) sit beside its library: <package>/include
    package_include = Path(libtvm_ffi_path()).parent.parent / "include"
    if (package_include / "tvm" / "ffi" / "c_api.h").is_file():
        dirs.append(str(package_include))
    else:  # an unusual layout: ask the package
        import tvm_ffi.libinfo

        dirs.append(str(tvm_ffi.libinfo.find_include_path()))
        dirs.append(str(tvm_ffi.libinfo.find_dlpack_include_path()))
    return list(dict.fromkeys(dirs))


def _import_extension(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(_MODULE_NAME, path)
    if spec is None or spec.loader is None:
        raise NativeBuildError(f"cannot import the Cython launcher from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _import_prebuilt(path: Path) -> ModuleType:
    """Import the launcher named by ``$TL_RUNTIME_LAUNCHER``; any failure names the variable."""
    problem = None
    if not path.is_file():
        problem = "no such file"
    else:
        try:
            module = _import_extension(path)
        except (ImportError, OSError, NativeBuildError) as exc:
            problem = f"it cannot be imported: {exc}"
        else:
            built_from = getattr(module, "SOURCE_DIGEST", None)
            try:
                expected = launcher_source_digest(read_launcher_source())
            except OSError as exc:
                expected = f"unreadable ({exc})"
            if not hasattr(module, "Launcher"):
                problem = "it is not a tl-runtime launcher (it defines no Launcher)"
            elif built_from != expected:
                problem = (
                    f"it was built from other launcher sources (source digest {built_from}; "
                    f"this tl-runtime's sources in {LAUNCHER_DIR} have {expected})"
                )
            else:
                return module
    raise AdapterUnavailableError(
        f"TL_RUNTIME_LAUNCHER={str(path)!r}: expected the path of a built tl-runtime Cython "
        f"launcher extension; {problem}. Unset it to build the launcher on first use, or "
        "use adapter='tvm_ffi'"
    )


def shipped_launcher() -> Path | None:
    """The launcher a built wheel ships (hatch_build.py), if it was built from this source.

    Editable installs have none (the launcher is compiled on first use); a shipped binary
    whose recorded source digest (`launcher_source_digest`: ``launcher.pyx`` and every
    piece) differs from the installed source's is ignored.
    """
    directory = LAUNCHER_DIR
    record = directory / f"{_MODULE_NAME}.sha256"
    try:
        recorded = record.read_text().strip()
        if recorded != launcher_source_digest(read_launcher_source(directory)):
            return None
    except OSError:
        return None
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = directory / f"{_MODULE_NAME}{suffix}"
        if candidate.is_file():
            return candidate
    return None


def launcher_extension() -> ModuleType:
    """Return the compiled launcher module: ``$TL_RUNTIME_LAUNCHER``, else the one the
    wheel ships, else one built on first use (Cython and a C compiler) in the user cache.

    Raises:
        AdapterUnavailableError: Cython or the C compiler is missing, or the build failed
            (the message holds the compiler's output).
    """
    global _extension
    with _lock:
        if _extension is not None:
            return _extension
        prebuilt = os.environ.get("TL_RUNTIME_LAUNCHER")
        if prebuilt:
            _extension = _import_prebuilt(Path(prebuilt))
            return _extension
        shipped = shipped_launcher()
        if shipped is not None:
            from tl_runtime.context import ensure_context_symbols, libtvm_ffi

            ensure_context_symbols()
            libtvm_ffi()  # loaded globally: the launcher links against it
            try:
                _extension = _import_extension(shipped)
                return _extension
            except (ImportError, OSError, NativeBuildError):
                pass  # e.g. a tvm-ffi of another ABI: build one for this machine below
        from tl_runtime.context import ensure_context_symbols, libtvm_ffi

        # One snapshot of the source: the index, the build key and what Cython reads.
        try:
            source = read_launcher_source()
        except OSError as exc:
            raise AdapterUnavailableError(
                f"the cython adapter cannot read its launcher's source in {LAUNCHER_DIR}: {exc}; "
                "reinstall tl-runtime, set $TL_RUNTIME_LAUNCHER, or use adapter='tvm_ffi'"
            ) from None
        source_digest = launcher_source_digest(source)
        built = _previously_built(source_digest)
        if built is not None:  # no Cython, compiler or lock needed to reuse it
            ensure_context_symbols()
            libtvm_ffi()
            _extension = _import_extension(built)
            return _extension
        from tl_runtime.native_build import (
            build_shared_library,
            cache_dir,
            cached_file_is_intact,
            find_c_compiler,
            record_cached_file,
        )

        ensure_context_symbols()  # loads libtvm_ffi globally, which the launcher links against
        import importlib.metadata  # the build path only: a cache hit never reads metadata

        try:
            # the version from metadata: importing Cython is needed only to generate C
            cython_version = importlib.metadata.version("Cython")
        except importlib.metadata.PackageNotFoundError:
            raise AdapterUnavailableError(
                "the cython adapter needs Cython to build its launcher (pip install cython), "
                "or a prebuilt launcher in $TL_RUNTIME_LAUNCHER; use adapter='tvm_ffi' instead"
            ) from None
        if find_c_compiler() is None:
            raise AdapterUnavailableError(
                "the cython adapter needs a C compiler to build its launcher (set CC or install "
                "gcc/clang); use adapter='tvm_ffi' instead"
            )
        import filelock

        key = _build_key(source_digest, cython_version)
        root = cache_dir()
        c_file = root / f"{_MODULE_NAME}-{key}.c"
        with filelock.FileLock(str(c_file) + ".lock", timeout=600):
            if not cached_file_is_intact(c_file):  # absent or damaged: generate it again
                work = root / f".{_MODULE_NAME}-{key}-{os.getpid()}"
                work.mkdir(exist_ok=True)
                try:
                    cythonize = importlib.import_module("Cython.Build").cythonize
                    pyx = write_launcher_source(source, work, _MODULE_NAME)
                    cythonize([str(pyx)], quiet=True, language_level=3, force=True)
                    os.replace(work / f"{_MODULE_NAME}.c", c_file)
                    record_cached_file(c_file)
                except Exception as exc:
                    raise AdapterUnavailableError(
                        f"cythonizing the launcher ({LAUNCHER_DIR}) failed: {exc}"
                    ) from None
                finally:
                    shutil.rmtree(work, ignore_errors=True)
        lib_dir = str(Path(libtvm_ffi_path()).parent)
        flags = [
            "-O2",
            *(f"-I{d}" for d in _include_dirs()),
            f"-L{lib_dir}",
            "-ltvm_ffi",
            f"-Wl,-rpath,{lib_dir}",
        ]
        try:
            path = build_shared_library(_MODULE_NAME, [c_file], [flags], key_extra=lib_dir)
        except NativeBuildError as exc:
            raise AdapterUnavailableError(f"building the Cython launcher failed: {exc}") from None
        libtvm_ffi()
        _extension = _import_extension(path)
        _record_built(path, source_digest)
        return _extension


def _build_key(source_digest: str, cython_version: str) -> str:
    """The cache key of the launcher's generated C: its source digest (every piece), the
    Cython that generates it and this Python."""
    return hashlib.sha256(
        source_digest.encode() + cython_version.encode() + sys.version.encode()
    ).hexdigest()[:20]


def _built_index(source_digest: str) -> Path:
    """The cache file naming the launcher built from this source for this tvm-ffi/Python.

    Its name is keyed by the source digest (every piece), so an edit to any piece finds no
    index and builds again instead of loading the launcher built before the edit.
    """
    from tl_runtime.native_build import cache_dir

    library = Path(libtvm_ffi_path())
    stat = library.stat()
    key = hashlib.sha256(
        source_digest.encode()
        + sys.version.encode()
        + f"{library}|{stat.st_size}|{stat.st_mtime_ns}".encode()
    ).hexdigest()[:20]
    return cache_dir() / f"{_MODULE_NAME}-built-{key}.txt"


def _previously_built(source_digest: str | None = None) -> Path | None:
    """The launcher an earlier process built from the source of ``source_digest`` (default:
    the installed source's), intact and inside the cache; else None."""
    from tl_runtime.native_build import cache_dir, cached_file_is_intact

    if source_digest is None:
        try:
            source_digest = launcher_source_digest(read_launcher_source())
        except OSError:
            return None
    try:
        path = Path(_built_index(source_digest).read_text(encoding="utf-8").strip())
    except (OSError, UnicodeDecodeError):
        return None
    if path.parent != cache_dir() or not cached_file_is_intact(path):
        return None
    return path


def _record_built(path: Path, source_digest: str) -> None:
    """Name ``path`` as the launcher built from the source of ``source_digest`` (the
    snapshot it was built from, not the source as it may be now)."""
    from tl_runtime.native_build import write_private_text

    with contextlib.suppress(OSError):  # only a shortcut for the next process
        write_private_text(_built_index(source_digest), str(path))


def make_launcher(
    extension: ModuleType,
    address: int,
    checker: ArgumentChecker,
    slow: Callable[..., Any],
    delegate: Callable[..., Any] | None = None,
) -> Any:
    """A ``Launcher`` of the compiled extension for the checker's kernel.

    Args:
        extension: the launcher module (``launcher_extension()``).
        address: the C entry's address, or 0 to check and then call ``delegate``.
        checker: the kernel's checker (its manifest and output allocation policy).
        slow: the complete path, called with the caller's args when the fast checks decline.
        delegate: with ``address`` 0, what launches: called with every parameter in order.
    """
    specs, n_symbols = launcher_specs(checker.plan)
    return extension.Launcher(
        address,
        specs,
        n_symbols,
        slow,
        outputs_follow,
        checker.allocation_alignment,
        delegate,
        negative_bit_layout,
        in_place_write_marker,
        version_count_layout,
    )


class CythonAdapter:
    """Loads the library through tvm-ffi, then calls its C entry from the Cython launcher.

    Raises:
        AdapterUnavailableError: the launcher cannot be built here.
        ArtifactError: the library cannot be loaded or lacks the entry symbol.
    """

    key = "cython"

    def __init__(self, manifest: Manifest, directory: Path, checker: ArgumentChecker) -> None:
        self.manifest = manifest
        self.checker = checker
        extension = launcher_extension()
        from tl_runtime.context import ensure_context_symbols

        ensure_context_symbols()  # before the library loads: the loader fills its slots
        refuse_incomplete_library(manifest.library, directory / manifest.library)
        try:
            # tvm-ffi's own loader, called from C: no import of tvm-ffi's Python package
            extension.load_library(str(directory / manifest.library))
        except Exception as exc:
            raise ArtifactError(f"cannot load library {manifest.library!r}: {exc}") from None
        # dlopen of the same path returns the handle tvm-ffi already loaded (slots filled).
        self._library = ctypes.CDLL(str(directory / manifest.library))
        symbol = f"__tvm_ffi_{manifest.entry_symbol}"
        try:
            address = ctypes.cast(getattr(self._library, symbol), ctypes.c_void_p).value
        except AttributeError:
            address = None
        if not address:
            raise ArtifactError(
                f"library {manifest.library!r} exports no C entry {symbol!r} for the cython adapter"
            )
        self.launcher: Any = make_launcher(extension, address, checker, self.call_checked)

    @classmethod
    def probe(cls) -> Availability:
        """Available with a prebuilt or shipped launcher, or where Cython and a C compiler exist."""
        if os.environ.get("TL_RUNTIME_LAUNCHER") or shipped_launcher() is not None:
            return Availability(True)
        if _extension is not None or _previously_built() is not None:
            return Availability(True)  # no look-up of Cython (a scan of sys.path) needed
        if importlib.util.find_spec("Cython") is None:
            return Availability(False, "Cython is not installed (needed to build the launcher)")
        from tl_runtime.native_build import find_c_compiler

        if find_c_compiler() is None:
            return Availability(False, "no C compiler found (needed to build the launcher)")
        return Availability(True)

    def call_checked(self, args: tuple[Any, ...]) -> Any:
        """The complete path: full checks and copies in Python, then the C launch."""
        prepared = self.checker.prepare(args)
        self.launcher.launch_prepared(prepared.args)
        mark_written_in_place(prepared.written_torch)
        return pack_result(prepared.outputs)

    def make_call(self) -> CallFunction:
        """Return the launcher itself: its C fast path defers to ``call_checked``."""
        launcher: CallFunction = self.launcher
        return launcher
