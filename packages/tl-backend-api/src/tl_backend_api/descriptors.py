"""The frozen descriptors: `ExecutionBackendSpec` and `Backend`.

Mapping fields are copied on construction and exposed as
`types.MappingProxyType`, so neither the caller's dict nor the descriptor
can change a descriptor afterwards.
"""

from __future__ import annotations

import threading
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import attrs
from tvm.target import Target

from tl_backend_api.errors import BackendValidationError, UnknownFeatureError
from tl_backend_api.protocols import (
    DeviceCodegen,
    HostCodegen,
    HostCodegenHook,
    PassPipeline,
    Toolchain,
)
from tl_backend_api.target import TargetLike, normalize_target

#: Execution backend (and adapter) that was removed; asking for it gets a
#: message naming its replacement.
REMOVED_EXECUTION_BACKENDS: Mapping[str, str] = types.MappingProxyType({"ctypes": "cython"})

TargetPredicate = Callable[[Target], bool]
_V = TypeVar("_V")


def always() -> bool:
    """The default availability probe: always available."""
    return True


def _require_callable(owner: str, field: str, value: object) -> None:
    if not callable(value):
        raise BackendValidationError(
            f"{owner}.{field}: expected a callable, got {type(value).__name__} {value!r}"
        )


def _non_empty_str(owner: str, field: str, value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise BackendValidationError(f"{owner}.{field}: expected a non-empty str, got {value!r}")


@attrs.frozen(init=False)
class ExecutionBackendSpec:
    """One way to run a backend's artifacts.

    Attributes:
        name: what users pass as ``execution_backend``.
        adapter: the tl_runtime adapter key that loads and launches the
            artifact (``"tvm_ffi"``, ``"cython"``, ``"nvrtc"``, ``"torch"``);
            ``None`` means ``name``. Everything downstream keys on this.
        is_available: zero-argument probe, *called* (its answer cached per process).
        supports_target: optional predicate; a spec that declines a target
            is not offered for it.
        enable_host_codegen: the backend generates host code for this spec
            (then `Backend.host_codegens` must hold one under its adapter).
        enable_device_compile: False selects the source-only path: device
            source is generated and no compiler runs.
        install_hint: what to install when the probe says no.

    Raises:
        BackendValidationError: an empty name or adapter, a non-callable
            probe/predicate, or the removed ``ctypes``.
    """

    name: str
    adapter: str
    is_available: Callable[[], bool]
    supports_target: TargetPredicate | None
    enable_host_codegen: bool
    enable_device_compile: bool
    install_hint: str

    def __init__(
        self,
        name: str,
        adapter: str | None = None,
        is_available: Callable[[], bool] = always,
        supports_target: TargetPredicate | None = None,
        enable_host_codegen: bool = False,
        enable_device_compile: bool = False,
        install_hint: str = "",
    ) -> None:
        # `adapter=None` means "the spec's own name"; filled before freezing.
        self.__attrs_init__(
            name,
            name if adapter is None else adapter,
            is_available,
            supports_target,
            enable_host_codegen,
            enable_device_compile,
            install_hint,
        )

    def __attrs_post_init__(self) -> None:
        owner = "ExecutionBackendSpec"
        _non_empty_str(owner, "name", self.name)
        _non_empty_str(owner, "adapter", self.adapter)
        for key in (self.name, self.adapter):
            if key in REMOVED_EXECUTION_BACKENDS:
                raise BackendValidationError(
                    f"{owner} {self.name!r}: {key!r} was removed as an execution backend; "
                    f"declare {REMOVED_EXECUTION_BACKENDS[key]!r} instead"
                )
        _require_callable(f"{owner} {self.name!r}", "is_available", self.is_available)
        if self.supports_target is not None:
            _require_callable(f"{owner} {self.name!r}", "supports_target", self.supports_target)
        for flag in ("enable_host_codegen", "enable_device_compile"):
            if not isinstance(getattr(self, flag), bool):
                raise BackendValidationError(
                    f"{owner} {self.name!r}.{flag}: expected a bool, got {getattr(self, flag)!r}"
                )
        if not isinstance(self.install_hint, str):
            raise BackendValidationError(
                f"{owner} {self.name!r}.install_hint: expected a str, got {self.install_hint!r}"
            )

    def accepts(self, target: Target) -> bool:
        """True when this spec is offered for ``target`` (no predicate: always).

        Raises:
            TypeError: the predicate returned something other than a bool.
        """
        if self.supports_target is None:
            return True
        answer = self.supports_target(target)
        if not isinstance(answer, bool):
            raise TypeError(
                f"ExecutionBackendSpec {self.name!r}.supports_target: expected a bool, "
                f"got {type(answer).__name__} {answer!r}"
            )
        return answer


_availability_lock = threading.Lock()
_availability: dict[int, tuple[ExecutionBackendSpec, bool, str]] = {}


def probe_availability(spec: ExecutionBackendSpec) -> tuple[bool, str]:
    """Call ``spec.is_available`` once per process and return ``(available, reason)``.

    The probe is called (never truth-tested as a function object); its
    answer is cached per spec for the life of the process. A probe that
    raises counts as unavailable, with the exception as the reason.

    Raises:
        TypeError: the probe returned something other than a bool.
    """
    key = id(spec)
    with _availability_lock:
        cached = _availability.get(key)
        if cached is not None and cached[0] is spec:
            return cached[1], cached[2]
        try:
            answer = spec.is_available()
        except Exception as exc:
            available, reason = False, f"its availability probe raised {exc!r}"
        else:
            if not isinstance(answer, bool):
                raise TypeError(
                    f"ExecutionBackendSpec {spec.name!r}.is_available(): expected a bool, "
                    f"got {type(answer).__name__} {answer!r}"
                )
            available, reason = answer, "" if answer else "its availability probe said no"
        # Holding the spec in the value keeps its id from being reused.
        _availability[key] = (spec, available, reason)
        return available, reason


def clear_availability_cache() -> None:
    """Forget cached availability answers (tests; a new install in a long process)."""
    with _availability_lock:
        _availability.clear()


def _mapping(owner: str, field: str, value: object) -> dict[Any, Any]:
    if not isinstance(value, Mapping):
        raise BackendValidationError(
            f"{owner}.{field}: expected a mapping, got {type(value).__name__} {value!r}"
        )
    return dict(value)


def _frozen(field: str, value: Mapping[str, _V]) -> Mapping[str, _V]:
    return types.MappingProxyType(_mapping("Backend", field, value))


def _frozen_pipelines(value: Mapping[str, PassPipeline]) -> Mapping[str, PassPipeline]:
    return _frozen("pipelines", value)


def _frozen_device_codegens(value: Mapping[str, DeviceCodegen]) -> Mapping[str, DeviceCodegen]:
    return _frozen("device_codegens", value)


def _frozen_host_codegens(value: Mapping[str, HostCodegen]) -> Mapping[str, HostCodegen]:
    return _frozen("host_codegens", value)


def _frozen_features(value: Mapping[str, TargetPredicate]) -> Mapping[str, TargetPredicate]:
    return _frozen("features", value)


def _frozen_callbacks(
    value: Mapping[str, Callable[..., Any]],
) -> Mapping[str, Callable[..., Any]]:
    return _frozen("callbacks", value)


def _frozen_toolchains(value: Mapping[str, Toolchain]) -> Mapping[str, Toolchain]:
    return _frozen("toolchains", value)


def _frozen_hooks(
    value: Mapping[str, Sequence[HostCodegenHook]],
) -> Mapping[str, tuple[HostCodegenHook, ...]]:
    copied = _mapping("Backend", "host_codegen_hooks", value)
    result: dict[str, tuple[HostCodegenHook, ...]] = {}
    for kind, hooks in copied.items():
        if isinstance(hooks, (str, bytes)) or not isinstance(hooks, Sequence):
            raise BackendValidationError(
                f"Backend.host_codegen_hooks[{kind!r}]: expected a sequence of hooks, "
                f"got {type(hooks).__name__}"
            )
        result[kind] = tuple(hooks)
    return types.MappingProxyType(result)


def _kinds(value: Sequence[str]) -> tuple[str, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise BackendValidationError(
            f"Backend.target_kinds: expected a sequence of kind names such as ('c', 'llvm'), "
            f"got {value!r}"
        )
    return tuple(value)


def _specs(value: Sequence[ExecutionBackendSpec]) -> tuple[ExecutionBackendSpec, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise BackendValidationError(
            "Backend.execution_backends: expected a sequence of ExecutionBackendSpec "
            f"(in auto order), got {type(value).__name__}"
        )
    return tuple(value)


@attrs.frozen(eq=False)
class Backend:
    """One target backend: everything needed to lower, generate and build for its kinds.

    Identity is the descriptor object itself (registering the same object
    twice is a no-op).

    Attributes:
        name: unique backend name (``"cpu"``, ``"cuda"``...).
        target_kinds: the TVM target kinds it owns, unique.
        pipelines: kind -> `PassPipeline`, exactly one per owned kind.
        device_codegens: kind -> `DeviceCodegen`, exactly one per owned kind.
        execution_backends: the specs, in ``"auto"`` order; at least one.
        supports_target: predicate required when several backends share a kind.
        host_codegens: adapter key -> `HostCodegen`; one for every spec
            with ``enable_host_codegen`` (keyed on the spec's adapter).
        host_codegen_hooks: kind -> hooks run on the host module, owned kinds only.
        features: capability name -> predicate on the target (see `supports`).
        callbacks: tvm-ffi global name -> function, registered once per
            process at the backend's first resolution.
        toolchains: tool name -> `Toolchain` the backend drives.

    Raises:
        BackendValidationError: any rule above is broken; the message names
            the field, what was expected and what came.
    """

    name: str
    target_kinds: tuple[str, ...] = attrs.field(converter=_kinds)
    pipelines: Mapping[str, PassPipeline] = attrs.field(converter=_frozen_pipelines)
    device_codegens: Mapping[str, DeviceCodegen] = attrs.field(converter=_frozen_device_codegens)
    execution_backends: tuple[ExecutionBackendSpec, ...] = attrs.field(converter=_specs)
    supports_target: TargetPredicate | None = None
    host_codegens: Mapping[str, HostCodegen] = attrs.field(
        factory=dict, converter=_frozen_host_codegens
    )
    host_codegen_hooks: Mapping[str, tuple[HostCodegenHook, ...]] = attrs.field(
        factory=dict, converter=_frozen_hooks
    )
    features: Mapping[str, TargetPredicate] = attrs.field(factory=dict, converter=_frozen_features)
    callbacks: Mapping[str, Callable[..., Any]] = attrs.field(
        factory=dict, converter=_frozen_callbacks
    )
    toolchains: Mapping[str, Toolchain] = attrs.field(factory=dict, converter=_frozen_toolchains)

    def __attrs_post_init__(self) -> None:
        _non_empty_str("Backend", "name", self.name)
        owner = f"Backend {self.name!r}"
        kinds = self.target_kinds
        if not kinds:
            raise BackendValidationError(
                f"{owner}.target_kinds: expected at least one kind, got ()"
            )
        for kind in kinds:
            _non_empty_str(owner, "target_kinds[]", kind)
        duplicates = sorted({k for k in kinds if kinds.count(k) > 1})
        if duplicates:
            raise BackendValidationError(
                f"{owner}.target_kinds: expected unique kinds, got {duplicates} more than once"
            )
        for field, protocol in (("pipelines", PassPipeline), ("device_codegens", DeviceCodegen)):
            table: Mapping[str, object] = getattr(self, field)
            missing = [k for k in kinds if k not in table]
            extra = sorted(k for k in table if k not in kinds)
            if missing or extra:
                raise BackendValidationError(
                    f"{owner}.{field}: expected exactly one per owned kind {list(kinds)}; "
                    f"missing {missing}, not owned {extra}"
                )
            for kind, value in table.items():
                if not isinstance(value, protocol):
                    raise BackendValidationError(
                        f"{owner}.{field}[{kind!r}]: expected a {protocol.__name__}, "
                        f"got {type(value).__name__}"
                    )
        specs = self.execution_backends
        if not specs:
            raise BackendValidationError(
                f"{owner}.execution_backends: expected at least one ExecutionBackendSpec, got ()"
            )
        for spec in specs:
            if not isinstance(spec, ExecutionBackendSpec):
                raise BackendValidationError(
                    f"{owner}.execution_backends: expected ExecutionBackendSpec items, "
                    f"got {type(spec).__name__}"
                )
        names = [spec.name for spec in specs]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise BackendValidationError(
                f"{owner}.execution_backends: expected unique names, got {repeated} more than once"
            )
        for spec in specs:
            if spec.enable_host_codegen and spec.adapter not in self.host_codegens:
                raise BackendValidationError(
                    f"{owner}: execution backend {spec.name!r} enables host codegen, so "
                    f"host_codegens needs an entry for its adapter {spec.adapter!r}; "
                    f"got keys {sorted(self.host_codegens)}"
                )
        for adapter, host_codegen in self.host_codegens.items():
            if not isinstance(host_codegen, HostCodegen):
                raise BackendValidationError(
                    f"{owner}.host_codegens[{adapter!r}]: expected a HostCodegen, "
                    f"got {type(host_codegen).__name__}"
                )
        for kind, hooks in self.host_codegen_hooks.items():
            if kind not in kinds:
                raise BackendValidationError(
                    f"{owner}.host_codegen_hooks: expected hooks only for owned kinds "
                    f"{list(kinds)}, got {kind!r}"
                )
            for hook in hooks:
                if not isinstance(hook, HostCodegenHook):
                    raise BackendValidationError(
                        f"{owner}.host_codegen_hooks[{kind!r}]: expected HostCodegenHook "
                        f"items, got {type(hook).__name__}"
                    )
        if self.supports_target is not None:
            _require_callable(owner, "supports_target", self.supports_target)
        for field in ("features", "callbacks"):
            for key, value in getattr(self, field).items():
                _non_empty_str(owner, f"{field} key", key)
                _require_callable(owner, f"{field}[{key!r}]", value)
        for tool_name, toolchain in self.toolchains.items():
            if not isinstance(toolchain, Toolchain):
                raise BackendValidationError(
                    f"{owner}.toolchains[{tool_name!r}]: expected a Toolchain, "
                    f"got {type(toolchain).__name__}"
                )

    def accepts(self, target: Target) -> bool:
        """True when this backend serves ``target``: an owned kind and, if
        present, ``supports_target`` says yes.

        Raises:
            TypeError: ``supports_target`` returned something other than a bool.
        """
        if str(target.kind.name) not in self.target_kinds:
            return False
        if self.supports_target is None:
            return True
        answer = self.supports_target(target)
        if not isinstance(answer, bool):
            raise TypeError(
                f"Backend {self.name!r}.supports_target: expected a bool, "
                f"got {type(answer).__name__} {answer!r}"
            )
        return answer

    def supports(self, feature: str, target: TargetLike) -> bool:
        """Ask whether ``target`` has capability ``feature`` on this backend.

        Args:
            feature: a name declared in `features` (``"tensor_cores"``...).
            target: any target form `normalize_target` accepts.

        Raises:
            UnknownFeatureError: ``feature`` is not declared (an error, not False).
            TypeError: the predicate returned something other than a bool.
            TargetError: ``target`` cannot be normalized.
        """
        predicate = self.features.get(feature)
        if predicate is None:
            raise UnknownFeatureError(
                f"backend {self.name!r} declares no feature {feature!r}; "
                f"expected one of {sorted(self.features)}"
            )
        answer = predicate(normalize_target(target))
        if not isinstance(answer, bool):
            raise TypeError(
                f"backend {self.name!r} feature {feature!r}: expected the predicate to "
                f"return a bool, got {type(answer).__name__} {answer!r}"
            )
        return answer

    def execution_backend(self, name: str) -> ExecutionBackendSpec:
        """The spec called ``name``.

        Raises:
            KeyError: no spec has that name.
        """
        for spec in self.execution_backends:
            if spec.name == name:
                return spec
        raise KeyError(
            f"backend {self.name!r} declares no execution backend {name!r}; "
            f"expected one of {[s.name for s in self.execution_backends]}"
        )
