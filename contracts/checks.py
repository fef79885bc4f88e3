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

from tvm.target import Target

import tl_runtime
from tl_backend_api import Backend, offered_execution_backends, probe_availability
from tl_backend_api.registry import ENTRY_POINT_GROUP

#: The Protocol every descriptor part must be annotated with in the contract module.
PART_PROTOCOLS = {
    "descriptor": "Backend",
    "pipelines": "PassPipeline",
    "device_codegens": "DeviceCodegen",
    "toolchains": "Toolchain",
    "launchers": "Adapter",
}

#: The entry-point group tl_runtime finds adapters (launchers) under.
ADAPTER_GROUP = "tl.adapters"


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
            else:
                # `x: Proto`, `x: module.Proto` and `x: type[Proto]` all name Proto.
                for part in ast.walk(annotation):
                    if isinstance(part, ast.Name):
                        names.add(part.id)
                    elif isinstance(part, ast.Attribute):
                        names.add(part.attr)
    return names


def own_launchers(backend: Backend, package: str) -> list[object]:
    """The adapter classes ``package`` publishes (``tl.adapters``) that ``backend``'s specs use."""
    used = {spec.adapter for spec in backend.execution_backends}
    found: list[object] = []
    for entry_point in importlib.metadata.entry_points(group=ADAPTER_GROUP):
        top = entry_point.value.split(":", 1)[0].split(".", 1)[0]
        if top == package and entry_point.name in used:
            found.append(entry_point.load())
    return found


def _parts(backend: Backend, package: str | None) -> dict[str, list[object]]:
    return {
        "descriptor": [backend],
        "pipelines": list(backend.pipelines.values()),
        "device_codegens": list(backend.device_codegens.values()),
        "toolchains": list(backend.toolchains.values()),
        "launchers": own_launchers(backend, package) if package else [],
    }


#: Parts the contract module instantiates itself: it must import their classes.
_INSTANTIATED = ("device_codegens", "toolchains")


def contract_problems(
    backend: Backend, module: ModuleType, package: str | None = None
) -> list[str]:
    """What ``module`` (the backend's contract module) fails to cover; empty when it covers all.

    Each part of the descriptor must be reachable from the module's globals
    (the object itself, or its class for device codegens and toolchains, which
    the module instantiates) and the module must annotate an assignment with
    the part's Protocol, which is what mypy then checks. A launcher the
    backend's package publishes under ``tl.adapters`` and its specs use is a
    part too (its class, annotated ``type[Adapter]``); ``package`` is the
    backend's top-level package, by default the one ``module`` belongs to.
    """
    problems: list[str] = []
    values = list(vars(module).values())
    annotated = annotation_names(module)
    if package is None and "." in module.__name__:
        package = module.__name__.split(".", 1)[0]  # P.contract belongs to P
    for part, objects in _parts(backend, package).items():
        if not objects:
            continue
        protocol = PART_PROTOCOLS[part]
        if protocol not in annotated:
            problems.append(f"{part}: no assignment annotated `: {protocol}`")
        for obj in objects:
            present = any(v is obj for v in values) or (
                part in _INSTANTIATED and any(v is type(obj) for v in values)
            )
            if not present:
                what = type(obj).__qualname__ if part in _INSTANTIATED else obj
                problems.append(f"{part}: {what!r} is not imported by {module.__name__}")
    return problems


def suite_adapters(backend: Backend, target: Target) -> tuple[list[str], list[str]]:
    """The adapters the kernel suite runs through for ``target``, and why others do not.

    A backend's artifacts run here when one of its execution backends offered for
    ``target`` names a launcher (an adapter) whose availability probe says yes:
    that is how a backend says its launcher runs on this machine, whether its
    kernels run on the host CPU or on a device the launcher reaches (a GPU, pocl,
    a CPU emulator, a fake driver). ``host_kind`` plays no part. Returns
    ``(adapters, reasons)``: the adapter keys in ``"auto"`` order, and one line per
    spec that does not run here (source only, or what its probe said).
    """
    adapters: list[str] = []
    reasons: list[str] = []
    for spec in offered_execution_backends(backend, target):
        if spec.adapter is None:
            reasons.append(f"{spec.name!r} is source only")
            continue
        available, reason = probe_availability(spec)
        if not available:
            launcher = tl_runtime.adapter_availability(spec.adapter)
            said = reason if launcher.available else f"{reason}; the launcher: {launcher.reason}"
            reasons.append(f"{spec.name!r} ({spec.adapter}): {said}")
        elif spec.adapter not in adapters:
            adapters.append(spec.adapter)
    return adapters, reasons
