"""Make the test plugins (tl-backend-dummy, tl-backend-broken) discoverable inside tests only.

The plugins are never installed into the development venv, so ``tl backends``,
``python -m tl_backend_api`` and ``./scripts/demo`` show the real backends
only. A test that needs them calls `plugin_path_entries` with a scratch
directory: it writes one minimal ``*.dist-info`` per plugin there (``METADATA``
and ``entry_points.txt``, read from the plugin's own ``pyproject.toml``), so
``importlib.metadata`` finds their ``tl.backends`` entry points, and returns
the ``sys.path`` entries (each plugin's ``src`` plus the scratch directory)
that make modules and entry points visible. `subprocess_env` puts the same
entries on ``PYTHONPATH`` for a child interpreter.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

#: The directory holding one folder per test plugin.
PLUGINS_DIR = Path(__file__).resolve().parent


def plugin_directories() -> list[Path]:
    """Every test plugin's folder (one holding a ``pyproject.toml``), sorted by name."""
    return sorted(p.parent for p in PLUGINS_DIR.glob("*/pyproject.toml"))


def write_distribution_metadata(plugin: Path, directory: Path) -> Path:
    """Write ``plugin``'s ``NAME-VERSION.dist-info`` (METADATA, entry_points.txt) under ``directory``.

    Returns the ``.dist-info`` folder. Raises ValueError when the plugin's
    pyproject.toml lacks ``project.name`` or ``project.version``.
    """
    project = tomllib.loads((plugin / "pyproject.toml").read_text())["project"]
    name, version = project.get("name"), project.get("version")
    if not isinstance(name, str) or not isinstance(version, str):
        raise ValueError(
            f"plugin: expected project.name and project.version in {plugin / 'pyproject.toml'}, "
            f"got name={name!r}, version={version!r}"
        )
    info = directory / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    groups: Mapping[str, Mapping[str, str]] = project.get("entry-points", {})
    lines: list[str] = []
    for group, entries in groups.items():
        lines.append(f"[{group}]")
        lines.extend(f"{key} = {value}" for key, value in entries.items())
        lines.append("")
    (info / "entry_points.txt").write_text("\n".join(lines))
    return info


def plugin_path_entries(directory: Path) -> list[str]:
    """Write every plugin's metadata under ``directory``; return the path entries that expose them."""
    entries: list[str] = []
    for plugin in plugin_directories():
        write_distribution_metadata(plugin, directory)
        entries.append(str(plugin / "src"))
    entries.append(str(directory))
    return entries


def subprocess_env(entries: list[str], base: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of ``base`` (default: ``os.environ``) with ``entries`` first on ``PYTHONPATH``."""
    env = dict(os.environ if base is None else base)
    previous = env.get("PYTHONPATH")
    env["PYTHONPATH"] = os.pathsep.join([*entries, *([previous] if previous else [])])
    return env
