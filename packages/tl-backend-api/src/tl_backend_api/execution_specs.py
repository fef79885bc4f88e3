"""`ExecutionBackendSpec`: one way to run a backend's artifacts, and its availability probe.

A spec has two probes: ``is_available`` (can its artifacts *run* here: the launcher,
the device, its driver) and ``can_build`` (can its artifacts be *built* here: the
compiler it runs, if any; a source-only spec needs nothing). Exporting an artifact for
another machine needs only the second. `probe_availability` and `probe_buildable` call
them once per process and cache the answers.
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
    """The default availability probe (omit ``is_available``): always available."""
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
        enable_device_compile: False selects the source-only path: device
            source is generated and no compiler runs.
        install_hint: what to install when the probe says no.
        can_build: zero-argument probe: can this machine *build* the spec's artifacts
            (its compiler is present)? Default: always (a spec that runs no compiler).
            A spec that builds without the device (a cubin from nvcc) says so here, so
            an artifact can be exported where it cannot run.
        build_hint: what building needs when ``can_build`` says no.
        aliases: other names users may pass for this spec (names a program written for
            another system uses, e.g. TileLang's); resolution picks the spec and the
            artifact records ``name``.

    Raises:
        BackendValidationError: an empty name or adapter, a non-callable
            probe/predicate, a malformed or repeated alias, or the removed ``ctypes``.
    """

    name: str
    adapter: str | None
    is_available: Callable[[], bool]
    supports_target: TargetPredicate | None
    enable_device_compile: bool
    install_hint: str
    aliases: tuple[str, ...]
    can_build: Callable[[], bool]
    build_hint: str

    def __init__(
        self,
        name: str,
        adapter: str | _SameAsName | None = SAME_AS_NAME,
        is_available: Callable[[], bool] = always,
        supports_target: TargetPredicate | None = None,
        enable_device_compile: bool = False,
        install_hint: str = "",
        aliases: Sequence[str] = (),
        can_build: Callable[[], bool] = always,
        build_hint: str = "",
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
            enable_device_compile,
            install_hint,
            tuple(aliases),
            can_build,
            build_hint,
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
        _require_callable(f"{owner} {self.name!r}", "can_build", self.can_build)
        if self.supports_target is not None:
            _require_callable(f"{owner} {self.name!r}", "supports_target", self.supports_target)
        if not isinstance(self.enable_device_compile, bool):
            raise BackendValidationError(
                f"{owner} {self.name!r}.enable_device_compile: expected a bool, "
                f"got {self.enable_device_compile!r}"
            )
        for hint in ("install_hint", "build_hint"):
            if not isinstance(getattr(self, hint), str):
                raise BackendValidationError(
                    f"{owner} {self.name!r}.{hint}: expected a str, got {getattr(self, hint)!r}"
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
# (id(spec), probe field) -> (spec, answer, reason); the spec is held so its id stays unique.
_availability: dict[tuple[int, str], tuple[ExecutionBackendSpec, bool, str]] = {}


_PROBE_NAMES = {"is_available": "availability", "can_build": "can_build"}


def _probe(spec: ExecutionBackendSpec, field: str) -> tuple[bool, str]:
    key = (id(spec), field)
    label = _PROBE_NAMES[field]
    with _availability_lock:
        cached = _availability.get(key)
        if cached is not None and cached[0] is spec:
            return cached[1], cached[2]
        try:
            answer = getattr(spec, field)()
        except Exception as exc:
            available, reason = False, f"its {label} probe raised {exc!r}"
        else:
            if not isinstance(answer, bool):
                raise TypeError(
                    f"ExecutionBackendSpec {spec.name!r}.{field}(): expected a bool, "
                    f"got {type(answer).__name__} {answer!r}"
                )
            available, reason = answer, "" if answer else f"its {label} probe said no"
        _availability[key] = (spec, available, reason)
        return available, reason


def probe_availability(spec: ExecutionBackendSpec) -> tuple[bool, str]:
    """Call ``spec.is_available`` once per process and return ``(available, reason)``:
    whether the spec's artifacts can *run* here.

    The probe is called (never truth-tested as a function object); its
    answer is cached per spec for the life of the process. A probe that
    raises counts as unavailable, with the exception as the reason.

    Raises:
        TypeError: the probe returned something other than a bool.
    """
    return _probe(spec, "is_available")


def probe_buildable(spec: ExecutionBackendSpec) -> tuple[bool, str]:
    """Call ``spec.can_build`` once per process and return ``(buildable, reason)``:
    whether the spec's artifacts can be *built* here (run or not). Cached and guarded
    like `probe_availability`.

    Raises:
        TypeError: the probe returned something other than a bool.
    """
    return _probe(spec, "can_build")


def clear_availability_cache() -> None:
    """Forget cached availability answers (tests; a new install in a long process)."""
    with _availability_lock:
        _availability.clear()
