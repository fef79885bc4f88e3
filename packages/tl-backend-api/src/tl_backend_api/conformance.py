"""Conformance checks every backend must pass, reusable by a backend team's own tests.

`conformance_problems` returns what is wrong (empty when the backend
conforms); `assert_conforms` raises with the whole list. contracts/ runs
them against every installed backend.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable

import attrs
from tvm.target import Target

from tl_backend_api.descriptors import Backend, probe_availability
from tl_backend_api.errors import BackendError
from tl_backend_api.kinds import resolve_backend, target_kind
from tl_backend_api.protocols import (
    DeviceCodegen,
    PassPipeline,
    Toolchain,
    is_kebab_case,
)
from tl_backend_api.registry import isolated_registry, register_backend

#: Adapter keys starting with this are reserved for tests that need a key no
#: backend installs: `conformance_problems` refuses a spec naming one, and the
#: scaffold never generates one, so such a test cannot break when a backend
#: package (generated or written by hand) is installed next to it.
RESERVED_ADAPTER_KEY_PREFIX = "never-installed-"


def _positional_arity(function: Callable[..., object]) -> int | None:
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None
    required = [
        p
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    return len(required)


def _default_target(kind: str) -> Target | None:
    try:
        return Target({"kind": kind})
    except Exception:
        return None


def installed_adapter_keys() -> frozenset[str]:
    """The adapter keys installed in tl_runtime (its own and other packages' ``tl.adapters``)."""
    import tl_runtime

    return frozenset(tl_runtime.adapter_keys())


def conformance_problems(
    backend: Backend,
    *,
    check_resolution: bool = True,
    adapter_keys: Iterable[str] | None = None,
) -> list[str]:
    """Everything ``backend`` does wrong against the contract (empty list: conforms).

    Checks: the descriptor re-validates; every owned kind is a TVM target
    kind; pipelines, device codegens and toolchains satisfy their
    Protocols (members present, callable with the declared arity); stage
    names are kebab-case and unique; every availability probe and the
    device probe (`Backend.is_active`) return a bool; every adapter a spec
    names is one installed in tl_runtime (``adapter_keys``: default
    `installed_adapter_keys`, so a package that installs its own adapter
    conforms; a source-only spec names none); `Backend.capabilities_for` answers a
    `Capabilities` on each owned kind's default target; and
    (``check_resolution``) a registry holding only this backend resolves
    each owned kind, each declared alias and (with an `auto_kind` whose
    device is present) ``"auto"`` to it, when it has no ``supports_target``.
    """
    problems: list[str] = []
    if not isinstance(backend, Backend):
        return [f"expected a tl_backend_api.Backend, got {type(backend).__name__}"]
    try:
        attrs.evolve(backend)
    except (BackendError, TypeError) as exc:
        problems.append(f"descriptor does not re-validate: {exc}")
    for kind in backend.target_kinds:
        target = _default_target(kind)
        if target is None:
            problems.append(f"target kind {kind!r} is not a TVM target kind")
            continue
        pipeline = backend.pipelines.get(kind)
        if not isinstance(pipeline, PassPipeline):
            problems.append(f"pipelines[{kind!r}] is not a PassPipeline")
        else:
            names = tuple(pipeline.stage_names)
            if not names:
                problems.append(f"pipelines[{kind!r}] has no stages")
            if len(set(names)) != len(names):
                problems.append(f"pipelines[{kind!r}] repeats a stage name: {list(names)}")
            bad = [n for n in names if not is_kebab_case(n)]
            if bad:
                problems.append(f"pipelines[{kind!r}] stage names not kebab-case: {bad}")
        codegen = backend.device_codegens.get(kind)
        if not isinstance(codegen, DeviceCodegen):
            problems.append(f"device_codegens[{kind!r}] is not a DeviceCodegen")
        else:
            for member in ("emit_source", "build"):
                arity = _positional_arity(getattr(codegen, member))
                if arity is not None and arity != 2:
                    problems.append(
                        f"device_codegens[{kind!r}].{member} must take (mod, target); "
                        f"it requires {arity} positional arguments"
                    )
        try:
            backend.capabilities_for(target)
        except Exception as exc:
            problems.append(f"capabilities for target kind {kind!r} raised {exc!r}")
    installed = frozenset(installed_adapter_keys() if adapter_keys is None else adapter_keys)
    for spec in backend.execution_backends:
        try:
            probe_availability(spec)
        except TypeError as exc:
            problems.append(str(exc))
        if spec.adapter is not None and spec.adapter.startswith(RESERVED_ADAPTER_KEY_PREFIX):
            problems.append(
                f"execution backend {spec.name!r} names adapter {spec.adapter!r}; keys "
                f"starting with {RESERVED_ADAPTER_KEY_PREFIX!r} are reserved for tests"
            )
        elif spec.adapter is not None and spec.adapter not in installed:
            problems.append(
                f"execution backend {spec.name!r} names adapter {spec.adapter!r}; "
                f"expected one installed in tl_runtime {sorted(installed)} (a package adds "
                "its own under the tl.adapters entry-point group)"
            )
    device_present = False
    try:
        device_present = backend.device_present()
    except TypeError as exc:
        problems.append(str(exc))
    for tool_name, toolchain in backend.toolchains.items():
        if not isinstance(toolchain, Toolchain):
            problems.append(f"toolchains[{tool_name!r}] is not a Toolchain")
            continue
        try:
            toolchain.discover()
        except Exception as exc:
            problems.append(f"toolchains[{tool_name!r}].discover() raised {exc!r}; expected None")
    if check_resolution and backend.supports_target is None:
        with isolated_registry(discover=False):
            register_backend(backend)
            for kind in backend.target_kinds:
                if _default_target(kind) is None:
                    continue
                try:
                    resolved = resolve_backend({"kind": kind})
                except Exception as exc:
                    problems.append(f"kind {kind!r} does not resolve: {exc}")
                    continue
                if resolved is not backend:
                    problems.append(f"kind {kind!r} resolved to {resolved.name!r}")
            problems += _alias_and_auto_problems(backend, device_present)
    return problems


def _alias_and_auto_problems(backend: Backend, device_present: bool) -> list[str]:
    """Inside a registry holding only ``backend``: its aliases and ``"auto"`` reach it."""
    problems: list[str] = []
    for alias, kind in backend.kind_aliases.items():
        try:
            resolved_kind = target_kind(alias)
        except Exception as exc:
            problems.append(f"kind alias {alias!r} does not resolve: {exc}")
            continue
        if resolved_kind != kind:
            problems.append(f"kind alias {alias!r} resolved to {resolved_kind!r}, not {kind!r}")
    if backend.auto_kind is not None and device_present:
        try:
            auto = target_kind("auto")
        except Exception as exc:
            problems.append(f"'auto' does not resolve although the device is present: {exc}")
        else:
            if auto != backend.auto_kind:
                problems.append(f"'auto' resolved to {auto!r}, not auto_kind {backend.auto_kind!r}")
    return problems


def assert_conforms(backend: Backend) -> None:
    """Raise AssertionError listing every problem `conformance_problems` finds."""
    problems = conformance_problems(backend)
    if problems:
        name = getattr(backend, "name", repr(backend))
        raise AssertionError(
            f"backend {name!r} breaks the contract:\n" + "\n".join(f"  - {p}" for p in problems)
        )
