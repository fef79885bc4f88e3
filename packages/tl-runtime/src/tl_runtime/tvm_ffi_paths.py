"""Where tvm-ffi's shared library is, found without importing its Python package.

Importing the ``tvm_ffi`` package costs tens of milliseconds, and seconds where torch is
installed (it imports torch). Code that needs only ``libtvm_ffi`` (the Cython launcher's
link and load, the context symbols) finds the file here instead.
"""

from __future__ import annotations

import importlib.util
import os


def libtvm_ffi_path() -> str:
    """The path of ``libtvm_ffi`` (the shared library), without importing the Python package.

    Raises:
        ImportError: apache-tvm-ffi is not installed.
    """
    spec = importlib.util.find_spec("tvm_ffi")
    locations = (spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        for name in ("libtvm_ffi.so", "libtvm_ffi.dylib", "tvm_ffi.dll"):
            candidate = os.path.join(location, "lib", name)
            if os.path.isfile(candidate):
                return candidate
    import tvm_ffi.libinfo  # an unusual layout: ask the package

    return str(tvm_ffi.libinfo.find_libtvm_ffi())
