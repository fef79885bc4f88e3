"""Hatch build hook: a built tl-runtime wheel ships its native code compiled.

Two native pieces, each beside a record of its source's sha256 (a shipped binary whose
record does not match the installed source is ignored and the piece is built on first
use instead; the launcher's record is the digest of all its source files,
``tl_runtime.launcher_sources.launcher_source_digest``):

* the Cython launcher (below);
* the C context helper (``src/tl_runtime/_native/context_helper.c``: parallel loops,
  workspaces, thread stacks of TVM-built CPU kernels), compiled with OpenMP where the
  build machine's compiler has it, else with pthreads, as
  ``tl_runtime/_native/tl_rt_context_helper.so``. Without it a parallel kernel could not
  run on a machine with no C compiler.

The ``cython`` adapter's launcher (``src/tl_runtime/_native/launcher.pyx`` and the
``*.pxi`` pieces it includes) is cythonized and compiled against tvm-ffi's headers and
library when the wheel is built, and shipped as
``tl_runtime/_native/tl_rt_launcher<EXT_SUFFIX>`` beside a record of the source's digest
(the source files ship too, as package data); the wheel becomes a platform wheel. A machine that installs the wheel needs no
Cython and no C compiler to run the fastest adapter. Editable installs skip this: their
launcher is compiled on first use into the per-user cache (what the runtime falls back
to whenever no shipped launcher matches the source).

``TL_RUNTIME_PURE_WHEEL=1`` builds a pure-Python wheel without either (then the
runtime compiles them on first use, where Cython and a compiler exist).

The wheel this hook makes is tagged ``linux_x86_64`` (the build machine's platform);
``scripts/build-runtime-wheel`` repairs it into a ``manylinux`` wheel with auditwheel
(docs/deploy.md, "Building the tl-runtime wheel").
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

MODULE = "tl_rt_launcher"
HELPER = "tl_rt_context_helper"
# The flag sets tl_runtime.context tries on first use, in the same order.
HELPER_FLAG_SETS = (["-O2", "-fopenmp", "-pthread"], ["-O2", "-pthread"])


class LauncherBuildHook(BuildHookInterface):  # type: ignore[misc]
    """Compiles the launcher into the wheel (standard builds of the wheel target only)."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version != "standard":
            return
        if os.environ.get("TL_RUNTIME_PURE_WHEEL", "").strip() not in ("", "0"):
            return
        root = Path(self.root)
        sources = _launcher_sources_module(root)
        # One snapshot: the record is its digest and Cython compiles these very bytes.
        snapshot = sources.read_launcher_source(root / "src" / "tl_runtime" / "_native")
        self._work = Path(tempfile.mkdtemp(prefix="tl-runtime-launcher-build-"))
        built = _build(sources, snapshot, self._work)
        digest = self._work / f"{MODULE}.sha256"
        digest.write_text(sources.launcher_source_digest(snapshot) + "\n")
        force_include = build_data.setdefault("force_include", {})
        force_include[str(built)] = f"tl_runtime/_native/{built.name}"
        force_include[str(digest)] = f"tl_runtime/_native/{digest.name}"
        helper_source = root / "src" / "tl_runtime" / "_native" / "context_helper.c"
        helper = _build_helper(helper_source, self._work)
        helper_digest = self._work / f"{HELPER}.sha256"
        helper_digest.write_text(hashlib.sha256(helper_source.read_bytes()).hexdigest() + "\n")
        force_include[str(helper)] = f"tl_runtime/_native/{helper.name}"
        force_include[str(helper_digest)] = f"tl_runtime/_native/{helper_digest.name}"
        build_data["pure_python"] = False
        build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        work = getattr(self, "_work", None)
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)


def _launcher_sources_module(root: Path) -> ModuleType:
    """``tl_runtime.launcher_sources`` loaded from this source tree (stdlib only): the
    runtime and this hook read, hash and write the launcher's pieces with the same code."""
    path = root / "src" / "tl_runtime" / "launcher_sources.py"
    spec = importlib.util.spec_from_file_location("_tl_runtime_launcher_sources", path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build(sources: ModuleType, snapshot: dict[str, bytes], work: Path) -> Path:
    """Cythonize and compile the launcher source ``snapshot`` in ``work``; return the
    extension module's path."""
    import tvm_ffi.libinfo
    from Cython.Build import cythonize

    source = sources.write_launcher_source(snapshot, work, MODULE)
    cythonize([str(source)], quiet=True, language_level=3, force=True)
    paths = sysconfig.get_paths()
    includes = [
        paths["include"],
        paths["platinclude"],
        str(tvm_ffi.libinfo.find_include_path()),
        str(tvm_ffi.libinfo.find_dlpack_include_path()),
    ]
    lib_dir = str(Path(tvm_ffi.libinfo.find_libtvm_ffi()).parent)
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    output = work / f"{MODULE}{suffix}"
    command = [
        _compiler(),
        "-O2",
        "-shared",
        "-fPIC",
        *(f"-I{d}" for d in dict.fromkeys(includes)),
        str(work / f"{MODULE}.c"),
        "-o",
        str(output),
        f"-L{lib_dir}",
        "-ltvm_ffi",
        # the installed layout: site-packages/tl_runtime/_native -> site-packages/tvm_ffi/lib
        "-Wl,-rpath,$ORIGIN/../../tvm_ffi/lib",
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stderr.write(result.stdout + result.stderr)
        raise RuntimeError(
            f"building the tl-runtime Cython launcher failed ({' '.join(command)}); "
            "install a C compiler, or set TL_RUNTIME_PURE_WHEEL=1 to build a wheel without it"
        )
    return output


def _compiler() -> str:
    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or "cc"


def _build_helper(source: Path, work: Path) -> Path:
    """Compile the context helper in ``work`` (OpenMP first, then pthreads only)."""
    output = work / f"{HELPER}.so"
    failures = []
    for flags in HELPER_FLAG_SETS:
        command = [_compiler(), *flags, "-shared", "-fPIC", str(source), "-o", str(output)]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode == 0:
            return output
        failures.append(f"$ {' '.join(command)}\n{result.stderr}")
    sys.stderr.write("\n".join(failures))
    raise RuntimeError(
        "building the tl-runtime context helper failed; install a C compiler, or set "
        "TL_RUNTIME_PURE_WHEEL=1 to build a wheel without native code"
    )
