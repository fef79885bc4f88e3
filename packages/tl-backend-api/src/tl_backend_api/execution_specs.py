"""`ExecutionBackendSpec`: one way to run a backend's artifacts, and its availability probe.

`probe_availability` calls a spec's probe once per process and caches the answer.
"""

from __future__ import annotations

import enum
import types
from collections.abc import Callable, Mapping, Sequence

import attrs
from tvm.target import Target

from tl_backend_api.errors import BackendValidationError
from tl_runtime.fork_safety import ForkSafeLock

#: Execution backend (and adapter) that was removed; asking for it gets a
#: message naming its replacement.
REMOVED_EXECUTION_BACKENDS: Mapping[str, str] = types.MappingProxyType({"ctypes": "cython"})

TargetPredicate = Callable[[Target], bool]


class _SameAsName(enum.Enum):
    """The default of `ExecutionBackendSpec`'s ``adapter``: the spec's own name."""

    SAME_AS_NAME = enum.auto()


SAME_AS_NAME = _SameAsName.SAME_AS_NAME
"""``ExecutionBackendSpec(adapter=...)``'s default: the adapter key is the spec's name."""


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
        name: what users pass as ``execution_backend``, and what artifacts record.
        adapter: the tl_runtime adapter key that loads and launches the artifact
            (``"tvm_ffi"``, ``"cython"``, a device launcher's key); omitted, the spec's
            name; None: the spec makes source-only artifacts that no adapter loads
            (``tl_runtime.load`` says so and names the specs that would run them).
            Everything downstream keys on this.
        is_available: zero-argument probe, *called* (its answer cached per process).
        supports_target: optional predicate; a spec that declines a target
            is not offered for it.
        enable_host_codegen: the backend generates host code for this spec
            (then `Backend.host_codegens` must hold one under its adapter).
        enable_device_compile: False selects the source-only path: device
            source is generated and no compiler runs.
        install_hint: what to install when the probe says no.
        aliases: other names users may pass for this spec (names a program written for
            another system uses, e.g. TileLang's); resolution picks the spec and the
            artifact records ``name``.

    Raises:
        BackendValidationError: an empty name or adapter, a non-callable
            probe/predicate, host codegen without an adapter, a malformed or
            repeated alias, or the removed ``ctypes``.
    """

    name: str
    adapter: str | None
    is_available: Callable[[], bool]
    supports_target: TargetPredicate | None
    enable_host_codegen: bool
    enable_device_compile: bool
    install_hint: str
    aliases: tuple[str, ...]

    def __init__(
        self,
        name: str,
        adapter: str | _SameAsName | None = SAME_AS_NAME,
        is_available: Callable[[], bool] = always,
        supports_target: TargetPredicate | None = None,
        enable_host_codegen: bool = False,
        enable_device_compile: bool = False,
        install_hint: str = "",
        aliases: Sequence[str] = (),
    ) -> None:
        # The adapter's default is the spec's own name; filled before freezing.
        if isinstance(aliases, str) or not isinstance(aliases, Sequence):
            raise BackendValidationError(
                f"ExecutionBackendSpec {name!r}.aliases: expected a sequence of names, "
                f"got {aliases!r}"
            )
        self.__attrs_init__(
            name,
            name if adapter is SAME_AS_NAME else adapter,
            is_available,
            supports_target,
            enable_host_codegen,
            enable_device_compile,
            install_hint,
            tuple(aliases),
        )

    def __attrs_post_init__(self) -> None:
        owner = "ExecutionBackendSpec"
        _non_empty_str(owner, "name", self.name)
        if self.adapter is not None:
            _non_empty_str(owner, "adapter", self.adapter)
        for key in (self.name, self.adapter or self.name, *self.aliases):
            if key in REMOVED_EXECUTION_BACKENDS:
                raise BackendValidationError(
                    f"{owner} {self.name!r}: {key!r} was removed as an execution backend; "
                    f"declare {REMOVED_EXECUTION_BACKENDS[key]!r} instead"
                )
        self._check_aliases(owner)
        _require_callable(f"{owner} {self.name!r}", "is_available", self.is_available)
        if self.supports_target is not None:
            _require_callable(f"{owner} {self.name!r}", "supports_target", self.supports_target)
        for flag in ("enable_host_codegen", "enable_device_compile"):
            if not isinstance(getattr(self, flag), bool):
                raise BackendValidationError(
                    f"{owner} {self.name!r}.{flag}: expected a bool, got {getattr(self, flag)!r}"
                )
        if self.enable_host_codegen and self.adapter is None:
            raise BackendValidationError(
                f"{owner} {self.name!r}: host code is generated for an adapter, so a spec "
                "with enable_host_codegen=True needs one, got adapter=None"
            )
        if not isinstance(self.install_hint, str):
            raise BackendValidationError(
                f"{owner} {self.name!r}.install_hint: expected a str, got {self.install_hint!r}"
            )

    def _check_aliases(self, owner: str) -> None:
        for alias in self.aliases:
            _non_empty_str(f"{owner} {self.name!r}", "aliases", alias)
            if alias in (self.name, "auto"):
                raise BackendValidationError(
                    f"{owner} {self.name!r}.aliases: expected names other than the spec's "
                    f"own and 'auto', got {alias!r}"
                )
        if len(set(self.aliases)) != len(self.aliases):
            raise BackendValidationError(
                f"{owner} {self.name!r}.aliases: expected distinct names, got {self.aliases!r}"
            )

    @property
    def names(self) -> tuple[str, ...]:
        """The spec's name, then its aliases: every name that selects it."""
        return (self.name, *self.aliases)

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


_availability_lock = ForkSafeLock()  # fresh in a forked child
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
