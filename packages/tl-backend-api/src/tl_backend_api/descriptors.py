"""The frozen `Backend` descriptor (`ExecutionBackendSpec` lives in `execution_specs`).

Mapping fields are copied on construction and exposed as
`types.MappingProxyType`, so neither the caller's dict nor the descriptor
can change a descriptor afterwards.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import attrs
import tvm_ffi
from tvm.target import Target

from tl_backend_api.capabilities import UNRESTRICTED, Capabilities, CapabilitiesLike
from tl_backend_api.errors import BackendValidationError
from tl_backend_api.execution_specs import REMOVED_EXECUTION_BACKENDS as REMOVED_EXECUTION_BACKENDS
from tl_backend_api.execution_specs import ExecutionBackendSpec as ExecutionBackendSpec
from tl_backend_api.execution_specs import TargetPredicate as TargetPredicate
from tl_backend_api.execution_specs import _non_empty_str, _require_callable
from tl_backend_api.execution_specs import always as always
from tl_backend_api.execution_specs import clear_availability_cache as clear_availability_cache
from tl_backend_api.execution_specs import probe_availability as probe_availability
from tl_backend_api.execution_specs import probe_buildable as probe_buildable
from tl_backend_api.protocols import DeviceCodegen, PassPipeline, Toolchain
from tl_backend_api.target import tvm_target_kinds

_V = TypeVar("_V")

#: The DLPack device type of host (CPU) memory: what a backend's artifacts
#: accept unless it declares otherwise.
HOST_DEVICE_TYPE: int = int(tvm_ffi.DLDeviceType.kDLCPU)


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


def _frozen_callbacks(
    value: Mapping[str, Callable[..., Any]],
) -> Mapping[str, Callable[..., Any]]:
    return _frozen("callbacks", value)


def _frozen_toolchains(value: Mapping[str, Toolchain]) -> Mapping[str, Toolchain]:
    return _frozen("toolchains", value)


def _kinds(value: Sequence[str]) -> tuple[str, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise BackendValidationError(
            "Backend.target_kinds: expected a sequence of kind names (TVM target kinds, "
            f"a tuple of str), got {value!r}"
        )
    return tuple(value)


def _kind_aliases(value: Mapping[str, str]) -> Mapping[str, str]:
    return _frozen("kind_aliases", value)


def _device_types(value: Sequence[int]) -> tuple[int, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise BackendValidationError(
            "Backend.argument_device_types: expected a sequence of DLPack device type codes "
            f"such as (1,), got {type(value).__name__} {value!r}"
        )
    codes: list[int] = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int) or item <= 0:
            raise BackendValidationError(
                "Backend.argument_device_types: expected positive DLPack device type codes "
                f"(tvm_ffi.DLDeviceType), got {item!r} in {value!r}"
            )
        codes.append(int(item))
    return tuple(codes)


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
        execution_backends: the specs, in ``"auto"`` order; at least one; their
            names and aliases unique.
        supports_target: predicate required when several backends share a kind.
        capabilities: what the device computes (`Capabilities`: float dtypes,
            atomics per memory space), or a function of the target returning
            it; lowering refuses a kernel that needs more (`capabilities_for`).
            Default: no restriction.
        callbacks: tvm-ffi global name -> function, registered once per
            process at the backend's first resolution.
        toolchains: tool name -> `Toolchain` the backend drives.
        is_active: zero-argument probe: is a device this backend runs on
            present? It must be cheap and never import torch (it runs for
            every ``"auto"`` target); a probe that raises counts as no. The
            default says yes (a backend that runs on the host CPU).
        auto_kind: the owned kind ``"auto"`` stands for when this backend is
            chosen; None (the default) keeps the backend out of ``"auto"``.
        auto_priority: ``"auto"`` picks, among backends with an `auto_kind`
            whose `is_active` says yes, the one with the highest priority
            (ties go to the backend name that sorts first); the CPU backend
            declares the lowest, so it is the fallback.
        kind_aliases: names users may write -> the owned kind they mean, for
            names that are not TVM target kinds (TVM calls HIP's kind
            ``rocm``). An alias must not be a TVM kind: TVM's own meaning wins.
        host_kind: the TVM kind of the host target a device target gets when
            the caller names none; None (the default) means the target is
            its own host, i.e. the backend's kernels run on the host CPU.
        argument_alignment: the byte alignment (a power of two) the
            generated code assumes of every tensor argument's base address,
            whatever a buffer declares; recorded per parameter in the
            artifact's manifest. Default 1 (no assumption beyond the buffer's).
        argument_device_types: the DLPack device types (``DLDeviceType``
            codes, tvm_ffi.DLDeviceType) whose arrays the artifacts accept,
            recorded in the manifest as ``argument_device_types``; default
            host memory only, ``(1,)``.
        imported_source_language: the language of the device source ``T.import_source``
            may add to the backend's generated module (``"cuda"``: CUDA C device
            helpers the device codegen places before the kernels); None (the
            default): the backend cannot compile imported source, and lowering
            refuses a kernel that imports any (`refuse_imported_source`).

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
    capabilities: CapabilitiesLike = UNRESTRICTED
    callbacks: Mapping[str, Callable[..., Any]] = attrs.field(
        factory=dict, converter=_frozen_callbacks
    )
    toolchains: Mapping[str, Toolchain] = attrs.field(factory=dict, converter=_frozen_toolchains)
    is_active: Callable[[], bool] = always
    auto_kind: str | None = None
    auto_priority: int = 0
    kind_aliases: Mapping[str, str] = attrs.field(factory=dict, converter=_kind_aliases)
    host_kind: str | None = None
    argument_alignment: int = 1
    argument_device_types: tuple[int, ...] = attrs.field(
        default=(HOST_DEVICE_TYPE,), converter=_device_types
    )
    imported_source_language: str | None = None

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
        names = [name for spec in specs for name in spec.names]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise BackendValidationError(
                f"{owner}.execution_backends: expected unique names and aliases, got "
                f"{repeated} more than once"
            )
        if self.imported_source_language is not None:
            _non_empty_str(owner, "imported_source_language", self.imported_source_language)
        if self.supports_target is not None:
            _require_callable(owner, "supports_target", self.supports_target)
        if not isinstance(self.capabilities, Capabilities):
            _require_callable(owner, "capabilities", self.capabilities)
        for key, value in self.callbacks.items():
            _non_empty_str(owner, "callbacks key", key)
            _require_callable(owner, f"callbacks[{key!r}]", value)
        for tool_name, toolchain in self.toolchains.items():
            if not isinstance(toolchain, Toolchain):
                raise BackendValidationError(
                    f"{owner}.toolchains[{tool_name!r}]: expected a Toolchain, "
                    f"got {type(toolchain).__name__}"
                )
        self._validate_target_facts(owner)

    def _validate_target_facts(self, owner: str) -> None:
        kinds = self.target_kinds
        _require_callable(owner, "is_active", self.is_active)
        if self.auto_kind is not None and self.auto_kind not in kinds:
            raise BackendValidationError(
                f"{owner}.auto_kind: expected None or one of the owned kinds {list(kinds)}, "
                f"got {self.auto_kind!r}"
            )
        if isinstance(self.auto_priority, bool) or not isinstance(self.auto_priority, int):
            raise BackendValidationError(
                f"{owner}.auto_priority: expected an int, got {self.auto_priority!r}"
            )
        tvm_kinds = tvm_target_kinds()
        for alias, kind in self.kind_aliases.items():
            _non_empty_str(owner, "kind_aliases key", alias)
            if alias in tvm_kinds:
                raise BackendValidationError(
                    f"{owner}.kind_aliases: expected names that are not TVM target kinds, "
                    f"got {alias!r} (TVM's own kind of that name would win)"
                )
            if kind not in kinds:
                raise BackendValidationError(
                    f"{owner}.kind_aliases[{alias!r}]: expected one of the owned kinds "
                    f"{list(kinds)}, got {kind!r}"
                )
        if self.host_kind is not None and self.host_kind not in tvm_kinds:
            raise BackendValidationError(
                f"{owner}.host_kind: expected None or a TVM target kind "
                f"({sorted(tvm_kinds)}), got {self.host_kind!r}"
            )
        alignment = self.argument_alignment
        if (
            isinstance(alignment, bool)
            or not isinstance(alignment, int)
            or alignment <= 0
            or alignment & (alignment - 1)
        ):
            raise BackendValidationError(
                f"{owner}.argument_alignment: expected a power of two number of bytes, "
                f"got {alignment!r}"
            )
        types_ = self.argument_device_types
        if not types_ or len(set(types_)) != len(types_):
            raise BackendValidationError(
                f"{owner}.argument_device_types: expected at least one DLPack device type, "
                f"each once, got {types_!r}"
            )

    @property
    def runs_on_host(self) -> bool:
        """True when the backend's kernels run on the host CPU (it declares no `host_kind`)."""
        return self.host_kind is None

    def default_host(self, target: Target) -> Target:
        """The host target for ``target`` when the caller names none.

        The target's own ``host`` if it has one; the target itself for a
        backend that `runs_on_host`; else a target of kind `host_kind`.
        """
        if target.host is not None:
            return target.host
        if self.host_kind is None:
            return target
        return Target({"kind": self.host_kind})

    def device_present(self) -> bool:
        """Call `is_active`: True when a device this backend runs on is present.

        A probe that raises counts as absent (``"auto"`` must not fail because
        one driver is broken).

        Raises:
            TypeError: the probe returned something other than a bool.
        """
        try:
            answer = self.is_active()
        except Exception:
            return False
        if not isinstance(answer, bool):
            raise TypeError(
                f"Backend {self.name!r}.is_active(): expected a bool, "
                f"got {type(answer).__name__} {answer!r}"
            )
        return answer

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

    def capabilities_for(self, target: Target) -> Capabilities:
        """What the device behind ``target`` computes: `capabilities`, called with the
        target when it is a function.

        Raises:
            TypeError: the function returned something other than a `Capabilities`.
        """
        declared = self.capabilities
        if isinstance(declared, Capabilities):
            return declared
        answer = declared(target)
        if not isinstance(answer, Capabilities):
            raise TypeError(
                f"Backend {self.name!r}.capabilities({target.kind.name!r}): expected a "
                f"tl_backend_api.Capabilities, got {type(answer).__name__} {answer!r}"
            )
        return answer

    def execution_backend(self, name: str) -> ExecutionBackendSpec:
        """The spec called ``name``, or whose `ExecutionBackendSpec.aliases` hold it.

        Raises:
            KeyError: no spec has that name or alias.
        """
        for spec in self.execution_backends:
            if name in spec.names:
                return spec
        raise KeyError(
            f"backend {self.name!r} declares no execution backend {name!r}; "
            f"expected one of {[s.name for s in self.execution_backends]}"
        )
