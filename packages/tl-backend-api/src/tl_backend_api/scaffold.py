"""``scripts/new-backend NAME``: create a backend's packages, which already pass the contract tests.

Run as ``python -m tl_backend_api.scaffold NAME [--kind KIND] [--host-kind KIND] [--dest DIR]``.
Two packages with the layout docs/backends.md describes (`tl_backend_api.scaffold_files`):
``tl-codegen-NAME`` at ``DIR`` (a ``tl.backends`` entry point named after the kind;
``src/tl_codegen_NAME/{__init__,backend,pipeline,codegen,toolchain,language,contract}.py``,
``contract.py`` holding annotated assignments mypy --strict checks against the
Protocols; a contract test) and, beside it, ``tl-runtime-NAME``: the launcher, a
distribution of its own that depends on tl-runtime alone and is found through the
``tl.adapters`` entry point. Device codegen raises NotImplementedError naming what
to write; everything else works as generated.

Packages generated into a workspace's ``packages/`` folder (one whose parent
holds a ``pyproject.toml`` with an ``[tool.importlinter]`` section) are also
added to that configuration (the codegen package to the codegen layer, the
launcher to the runtime plug-in layer), so the layering check covers them
without a hand edit; packages generated anywhere else change no other file.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    # tomli is a dependency on 3.10 only, so a 3.11 dev venv (where mypy checks
    # this branch for python_version 3.10) does not have it installed.
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

from tvm.target import Target

from tl_backend_api.conformance import RESERVED_ADAPTER_KEY_PREFIX
from tl_backend_api.scaffold_files import (
    codegen_package_files,
    launcher_key,
    runtime_distribution,
    runtime_package_files,
)

__all__ = [
    "ScaffoldError",
    "create_backend_package",
    "launcher_key",
    "main",
    "register_in_workspace",
    "runtime_package_dir",
    "workspace_config_for",
]

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class ScaffoldError(ValueError):
    """The scaffold cannot create the package (bad name/kind, destination taken)."""


_LIST_START = re.compile(r"^(?P<key>[a-z_]+) = \[\s*$")
_ONE_LINE_LIST = re.compile(r"^(?P<head>[a-z_]+ = \[[^\]]*)(?P<tail>\]\s*)$")


def _family(module: str) -> str:
    """The package family ``module`` joins: ``tl_codegen_`` (codegen) or ``tl_runtime_`` (launcher)."""
    return "tl_runtime_" if module.startswith("tl_runtime_") else "tl_codegen_"


def _add_to_lists(lines: list[str], module: str) -> list[str]:
    """Add ``module`` wherever the configuration names its family's packages (tl_codegen_* or
    tl_runtime_*): each multi-line list naming them one per line, each one-line list
    naming one, and the layer line that holds them (joined with ``|``)."""
    family = _family(module)
    item = re.compile(rf'^(?P<indent>\s*)"{family}[a-z0-9_]+",\s*$')
    layer = re.compile(rf'^(?P<head>\s*"[^"]*\b{family}[a-z0-9_]+[^"]*)(?P<tail>",\s*)$')
    named = re.compile(rf'"{family}[a-z0-9_]+"')
    out: list[str] = []
    key: str | None = None
    block: list[str] = []

    def flush() -> None:
        items = [i for i, line in enumerate(block) if item.match(line)]
        if key == "layers":
            for i, line in enumerate(block):
                match = layer.match(line)
                if match and module not in line.split('"')[1].replace(" ", "").split("|"):
                    block[i] = f"{match['head']} | {module}{match['tail']}"
        elif items and f'"{module}",' not in (line.strip() for line in block):
            indent = item.match(block[items[-1]])["indent"]  # type: ignore[index]
            block.insert(items[-1] + 1, f'{indent}"{module}",\n')
        out.extend(block)
        block.clear()

    for line in lines:
        if key is None:
            start = _LIST_START.match(line)
            one_line = _ONE_LINE_LIST.match(line)
            if start:
                key = start["key"]
            elif one_line and named.search(line) and f'"{module}"' not in line:
                line = f'{one_line["head"]}, "{module}"{one_line["tail"]}'
            out.append(line)
            continue
        if line.strip() == "]":
            flush()
            out.append(line)
            key = None
            continue
        block.append(line)
    flush()
    return out


def _is_layer_checked(config: dict[str, Any], module: str) -> bool:
    layered = {
        name.strip()
        for contract in config.get("contracts", [])
        if contract.get("type") == "layers"
        for layer in contract["layers"]
        for name in layer.split("|")
    }
    return module in config.get("root_packages", []) and module in layered


def register_in_workspace(pyproject: Path, module: str) -> bool:
    """Add the import package ``module`` to ``pyproject``'s ``[tool.importlinter]`` configuration.

    A codegen package (``tl_codegen_*``) joins ``root_packages``, the layer of
    the codegen packages and every list that names the codegen packages; a
    launcher package (``tl_runtime_*``) joins ``root_packages``, the layer of
    the runtime plug-ins and every list that names them (the plug-ins' own
    light-import contract among them). Lists are recognized when written one name
    per line, or on one line, as the repository's root pyproject.toml does.
    Returns False when it was already in root_packages and a layer. Raises ScaffoldError
    when the file has no importlinter section or the edit did not take (a
    configuration shaped differently: add the package by hand).
    """
    text = pyproject.read_text()
    config = tomllib.loads(text).get("tool", {}).get("importlinter")
    if config is None:
        raise ScaffoldError(f"pyproject: expected a [tool.importlinter] section in {pyproject}")
    if _is_layer_checked(config, module):
        return False
    updated = "".join(_add_to_lists(text.splitlines(keepends=True), module))
    if not _is_layer_checked(tomllib.loads(updated)["tool"]["importlinter"], module):
        what = "runtime plug-in" if _family(module) == "tl_runtime_" else "codegen"
        raise ScaffoldError(
            f"pyproject: could not add {module!r} to root_packages and the {what} layer of "
            f"{pyproject}; add it there by hand"
        )
    pyproject.write_text(updated)
    return True


def workspace_config_for(dest: Path) -> Path | None:
    """The workspace ``pyproject.toml`` whose import-linter config covers ``dest``, if any.

    That is ``dest/../../pyproject.toml`` when ``dest`` sits directly in a
    folder named ``packages`` and the file has a ``[tool.importlinter]`` section.
    """
    parent = dest.resolve().parent
    candidate = parent.parent / "pyproject.toml"
    if parent.name != "packages" or not candidate.is_file():
        return None
    config = tomllib.loads(candidate.read_text())
    return candidate if "importlinter" in config.get("tool", {}) else None


def runtime_package_dir(dest: Path, name: str) -> Path:
    """Where the launcher package of the codegen package at ``dest`` goes: its sibling
    ``tl-runtime-NAME``."""
    return dest.parent / runtime_distribution(name)


def _write(directory: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def create_backend_package(
    name: str,
    dest: Path | None = None,
    kind: str | None = None,
    host_kind: str | None = None,
) -> Path:
    """Write a backend's codegen package and its launcher package; return the codegen one.

    Args:
        name: the backend's name: lowercase letters, digits and ``_``,
            starting with a letter; the packages are ``tl_codegen_<name>`` and
            ``tl_runtime_<name>``.
        dest: the codegen package directory to create (must not exist or be
            empty); default ``packages/tl-codegen-<name>`` under the current
            directory. The launcher package goes beside it
            (`runtime_package_dir`, which must not hold files either). When they
            lie directly in a workspace's ``packages/`` folder, the workspace's
            import-linter configuration gains both (`register_in_workspace`).
        kind: the TVM target kind it serves; default ``name``.
        host_kind: the descriptor's ``host_kind``: None (the default) for kernels
            that run on the host CPU, a TVM kind (``"llvm"``) for a device backend.

    Raises:
        ScaffoldError: a bad name, a kind or host kind TVM does not know, an
            adapter key in the reserved namespace, or a destination that already
            holds files.
    """
    if not _NAME.match(name):
        raise ScaffoldError(
            f"name: expected lowercase letters, digits and '_' starting with a letter, got {name!r}"
        )
    kind = kind or name
    for option, value in (("kind", kind), ("host_kind", host_kind)):
        if value is None:
            continue
        try:
            Target({"kind": value})
        except Exception:
            raise ScaffoldError(
                f"{option}: expected a TVM target kind (one of {sorted(Target.list_kinds())}), "
                f"got {value!r}; pass --{option.replace('_', '-')}"
            ) from None
    if launcher_key(name).startswith(RESERVED_ADAPTER_KEY_PREFIX):
        raise ScaffoldError(
            f"name: the launcher key {launcher_key(name)!r} would start with "
            f"{RESERVED_ADAPTER_KEY_PREFIX!r}, which is reserved for tests; pick another name"
        )
    if dest is None:
        dest = Path("packages") / f"tl-codegen-{name.replace('_', '-')}"
    runtime_dest = runtime_package_dir(dest, name)
    for directory in (dest, runtime_dest):
        if directory.exists() and any(directory.iterdir()):
            raise ScaffoldError(
                f"dest: expected a new or empty directory, got {str(directory)!r} holding files"
            )
    workspace = workspace_config_for(dest)
    _write(dest, codegen_package_files(name, kind, host_kind))
    _write(runtime_dest, runtime_package_files(name, kind))
    if workspace is not None:
        register_in_workspace(workspace, f"tl_codegen_{name}")
        register_in_workspace(workspace, f"tl_runtime_{name}")
    return dest


def main(argv: list[str] | None = None) -> int:
    """Command line: ``NAME [--kind KIND] [--host-kind KIND] [--dest DIR]``; exit status 0,
    or 2 on a bad argument."""
    parser = argparse.ArgumentParser(
        prog="new-backend",
        description=(
            "Create tl-codegen-NAME and its launcher package tl-runtime-NAME, which pass "
            "the contract tests."
        ),
    )
    parser.add_argument("name", help="backend name (lowercase letters, digits and underscores)")
    parser.add_argument("--kind", help="TVM target kind it serves (default: NAME)")
    parser.add_argument(
        "--host-kind",
        help="TVM kind of the host side of a device backend, e.g. llvm (default: none, "
        "the kernels run on the host CPU)",
    )
    parser.add_argument(
        "--dest",
        type=Path,
        help="codegen package directory (default: packages/tl-codegen-NAME); the launcher "
        "package goes beside it",
    )
    args = parser.parse_args(argv)
    try:
        created = create_backend_package(args.name, args.dest, args.kind, args.host_kind)
    except ScaffoldError as exc:
        print(f"new-backend: {exc}", file=sys.stderr)
        return 2
    runtime = runtime_package_dir(created, args.name)
    print(f"created {created} and {runtime}")
    print(
        f"next: pip install -e {runtime} -e {created} && "
        f"python -m pytest {runtime / 'tests'} {created / 'tests'} contracts"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
