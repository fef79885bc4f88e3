"""Versions and source fingerprints of the compiler, computed without importing it.

Cache keys include the versions of every ``tl_*`` package and apache-tvm. A
development checkout installs the packages editable, so their version does not
change when their code does: the key also holds a fingerprint (path, size,
mtime of every ``.py`` file) of each ``tl_*`` package. Both are computed from
the file system alone (``importlib.metadata`` costs ~40 ms; importing the
packages would import tvm), so the cache-hit path stays fast.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
from functools import cache, lru_cache

COMPILER_PACKAGES = ("tl_ir", "tl_passes", "tl_backend_api", "tl_runtime", "tl_jit")
"""Packages whose code decides what a compile produces (tl_codegen_* are added when found)."""

DISTRIBUTIONS = ("apache_tvm", "apache_tvm_ffi")

_DIST_INFO = re.compile(r"^(?P<name>[A-Za-z0-9_.]+?)-(?P<version>[^-]+?)\.dist-info$")


@lru_cache(maxsize=1)
def installed_versions() -> dict[str, str]:
    """``{normalized distribution name: version}`` for every ``*.dist-info`` on ``sys.path``.

    The first entry found wins, as for imports. Names are normalized to lower
    case with ``_`` (``apache-tvm`` -> ``apache_tvm``).
    """
    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            match = _DIST_INFO.match(name)
            if match is None:
                continue
            key = re.sub(r"[-_.]+", "_", match["name"]).lower()
            found.setdefault(key, match["version"])
    return found


def _package_dir(module: str) -> str | None:
    """The directory of top-level package ``module``, the way the path finder finds it.

    ``importlib.util.find_spec`` would do, but it lists every ``sys.path`` directory
    (site-packages holds thousands of entries) on a fresh process's cache-hit path; a
    package directory with an ``__init__.py`` on ``sys.path`` is what it would find
    first. Other layouts (import hooks, namespace packages) fall back to ``find_spec``.
    """
    loaded = sys.modules.get(module)
    locations = getattr(loaded, "__path__", None)
    if locations:
        return str(next(iter(locations)))
    for entry in sys.path:
        candidate = os.path.join(entry or ".", module)
        if os.path.isfile(os.path.join(candidate, "__init__.py")):
            return candidate
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return str(next(iter(spec.submodule_search_locations)))


def _python_files(root: str, relative: str = "") -> list[tuple[str, os.stat_result]]:
    """``(path relative to root, stat)`` of every ``.py`` file below ``root``, sorted."""
    found: list[tuple[str, os.stat_result]] = []
    try:
        entries = sorted(os.scandir(os.path.join(root, relative)), key=lambda e: e.name)
    except OSError:
        return found
    for entry in entries:
        name = f"{relative}/{entry.name}" if relative else entry.name
        try:
            if entry.is_dir():
                if entry.name != "__pycache__":
                    found.extend(_python_files(root, name))
            elif entry.name.endswith(".py"):
                found.append((name, entry.stat()))
        except OSError:
            continue
    return found


@cache
def source_fingerprint(module: str) -> str:
    """A digest of (relative path, size, mtime) of every ``.py`` file of package ``module``.

    Returns ``"absent"`` when the package is not installed.
    """
    root = _package_dir(module)
    if root is None:
        return "absent"
    digest = hashlib.sha256()
    for rel, stat in _python_files(root):
        digest.update(f"{rel}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def codegen_packages() -> tuple[str, ...]:
    """The installed ``tl_codegen_*`` packages (top-level names), sorted."""
    names: set[str] = set()
    for entry in sys.path:
        try:
            listing = os.listdir(entry or ".")
        except OSError:
            continue
        for name in listing:
            match = _DIST_INFO.match(name)
            if match and re.sub(r"[-_.]+", "_", match["name"]).lower().startswith("tl_codegen_"):
                names.add(re.sub(r"[-_.]+", "_", match["name"]).lower())
    return tuple(sorted(names))


@lru_cache(maxsize=1)
def compiler_versions() -> dict[str, str]:
    """Every version and fingerprint the cache keys hold, as ``{name: value}`` (sorted keys).

    ``<package>``: the installed version; ``<package>#src``: its source fingerprint.
    """
    versions = installed_versions()
    result: dict[str, str] = {}
    for module in (*COMPILER_PACKAGES, *codegen_packages()):
        result[module] = versions.get(module, "unknown")
        result[f"{module}#src"] = source_fingerprint(module)
    for dist in DISTRIBUTIONS:
        result[dist] = versions.get(dist, "unknown")
    return dict(sorted(result.items()))
