"""Find each installed backend's own ``contract`` module and check that it covers the backend.

A backend package ``P`` (the top-level package its ``tl.backends`` entry
point names) ships ``P.contract``: annotated assignments such as
``device_codegen: DeviceCodegen = MyDeviceCodegen()`` that ``mypy --strict``
checks against the Protocols (``./scripts/test`` type-checks every
``packages/*/src``). Nothing central lists the backends: the tests here take
them from discovery, import ``P.contract`` and check that it names every
part of the installed descriptor, so a part added to the descriptor without a
matching annotation fails here rather than escaping the type check.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import inspect
from collections.abc import Iterable
from types import ModuleType

from tl_backend_api import Backend
from tl_backend_api.registry import ENTRY_POINT_GROUP

#: The Protocol every descriptor part must be annotated with in the contract module.
PART_PROTOCOLS = {
    "descriptor": "Backend",
    "pipelines": "PassPipeline",
    "device_codegens": "DeviceCodegen",
    "host_codegens": "HostCodegen",
    "host_codegen_hooks": "HostCodegenHook",
    "toolchains": "Toolchain",
}


def backend_packages(backends: Iterable[Backend]) -> dict[str, set[str]]:
    """Backend name -> the top-level packages whose ``tl.backends`` entry points yield it.

    Entry points that fail to load are skipped (discovery reports them); a
    backend registered without an entry point maps to an empty set.
    """
    wanted = {id(b): b.name for b in backends}
    found: dict[str, set[str]] = {name: set() for name in wanted.values()}
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            loaded = entry_point.load()
        except Exception:
            continue
        if id(loaded) in wanted:
            found[wanted[id(loaded)]].add(entry_point.value.split(":", 1)[0].split(".", 1)[0])
    return found


def import_contract_module(package: str) -> ModuleType:
    """Import ``<package>.contract``.

    Raises:
        AssertionError: the package has no ``contract`` module (errors raised
            while importing an existing one propagate unchanged).
    """
    name = f"{package}.contract"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        raise AssertionError(
            f"backend package {package!r} has no {name} module: add one with an annotated "
            "assignment per part (docs/backends.md, 'Keep the static check in step')"
        ) from None


def annotation_names(module: ModuleType) -> set[str]:
    """The names used as annotations of assignments anywhere in ``module``'s source."""
    tree = ast.parse(inspect.getsource(module))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign):
            annotation = node.annotation
            if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
                names.add(annotation.value.rsplit(".", 1)[-1])
            elif isinstance(annotation, ast.Name):
                names.add(annotation.id)
            elif isinstance(annotation, ast.Attribute):
                names.add(annotation.attr)
    return names


def _parts(backend: Backend) -> dict[str, list[object]]:
    hooks: list[object] = [
        hook for kind_hooks in backend.host_codegen_hooks.values() for hook in kind_hooks
    ]
    return {
        "descriptor": [backend],
        "pipelines": list(backend.pipelines.values()),
        "device_codegens": list(backend.device_codegens.values()),
        "host_codegens": list(backend.host_codegens.values()),
        "host_codegen_hooks": hooks,
        "toolchains": list(backend.toolchains.values()),
    }


def contract_problems(backend: Backend, module: ModuleType) -> list[str]:
    """What ``module`` (the backend's contract module) fails to cover; empty when it covers all.

    Each part of the descriptor must be reachable from the module's globals
    (the object itself, or its class for codegens, hooks and toolchains, which
    the module instantiates) and the module must annotate an assignment with
    the part's Protocol, which is what mypy then checks.
    """
    problems: list[str] = []
    values = list(vars(module).values())
    annotated = annotation_names(module)
    for part, objects in _parts(backend).items():
        if not objects:
            continue
        protocol = PART_PROTOCOLS[part]
        if protocol not in annotated:
            problems.append(f"{part}: no assignment annotated `: {protocol}`")
        for obj in objects:
            present = any(v is obj for v in values) or (
                part not in ("descriptor", "pipelines") and any(v is type(obj) for v in values)
            )
            if not present:
                what = type(obj).__qualname__ if part not in ("descriptor", "pipelines") else obj
                problems.append(f"{part}: {what!r} is not imported by {module.__name__}")
    return problems
