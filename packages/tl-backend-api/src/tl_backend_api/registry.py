"""The backend registry and its ``tl.backends`` entry-point discovery.

State is module-level and guarded by one lock. An entry point's name is the
target kind it serves (``c = "tl_codegen_cpu.backend:BACKEND"``); resolving
a target loads only the entry points of that target's kind, once.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import traceback
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

import attrs
import tvm_ffi
from tvm.target import Target

from tl_backend_api.descriptors import Backend
from tl_backend_api.errors import (
    AmbiguousBackendError,
    BackendConflictError,
    BackendError,
    BackendNotFoundError,
    PluginImportError,
)
from tl_backend_api.target import describe_target
from tl_runtime.fork_safety import ForkSafeLock
from tl_runtime.interrupts import interrupts_held

#: The entry-point group backends are published under.
ENTRY_POINT_GROUP = "tl.backends"


class EntryPointLike(Protocol):
    """What discovery needs of an entry point (`importlib.metadata.EntryPoint` fits)."""

    @property
    def name(self) -> str: ...

    @property
    def value(self) -> str: ...

    def load(self) -> Any: ...


@attrs.frozen
class PluginLoadFailure:
    """An entry point that could not contribute its backend.

    Attributes:
        kind: the target kind the entry point serves (its name).
        entry_point: ``"name = module:attr"``.
        distribution: the installed package that declares it, when known.
        error: what went wrong (exception type and message).
        details: the traceback text, for debugging.
    """

    kind: str
    entry_point: str
    distribution: str | None
    error: str
    details: str = ""

    def describe(self) -> str:
        """One line naming the package, the entry point and the error."""
        package = self.distribution or "<unknown distribution>"
        return f"package {package!r} (entry point {self.entry_point!r}): {self.error}"


def _installed_entry_points() -> list[EntryPointLike]:
    return list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))


def _distribution_name(entry_point: EntryPointLike) -> str | None:
    dist = getattr(entry_point, "dist", None)
    name = getattr(dist, "name", None) if dist is not None else None
    if isinstance(name, str):
        return name
    # Fallback: the top-level module, which is how users import the package.
    return entry_point.value.split(":", 1)[0].split(".", 1)[0] or None


@attrs.define
class _RegistryState:
    entry_point_source: Callable[[], Iterable[EntryPointLike]]
    backends: dict[str, Backend] = attrs.field(factory=dict)
    # kind -> backend names in registration order; never holds an empty list.
    by_kind: dict[str, list[str]] = attrs.field(factory=dict)
    loaded_kinds: set[str] = attrs.field(factory=set)
    all_loaded: bool = False
    failures: list[PluginLoadFailure] = attrs.field(factory=list)
    warned_failures: set[str] = attrs.field(factory=set)
    entry_points_cache: list[EntryPointLike] | None = None

    def entry_points(self) -> list[EntryPointLike]:
        if self.entry_points_cache is None:
            self.entry_points_cache = list(self.entry_point_source())
        return self.entry_points_cache


_lock = ForkSafeLock(reentrant=True)  # fresh in a forked child
_state = _RegistryState(entry_point_source=_installed_entry_points)
# id(backend) -> backend whose callbacks are registered. Per process, so an
# isolated registry does not re-register them; holding the backend keeps ids unique.
_callbacks_done: dict[int, Backend] = {}


def _register_global(name: str, function: Callable[..., Any]) -> None:
    """Publish one callback as a tvm-ffi global (override: backends replace TVM defaults)."""
    tvm_ffi.register_global_func(name, function, override=True)


def _check_shared_kinds(state: _RegistryState, backend: Backend, replacing: str | None) -> None:
    for kind in backend.target_kinds:
        others = [state.backends[n] for n in state.by_kind.get(kind, []) if n not in (replacing,)]
        if not others:
            continue
        everyone = [*others, backend]
        lacking = [b.name for b in everyone if b.supports_target is None]
        if lacking:
            raise BackendConflictError(
                f"backends {[b.name for b in everyone]} would share target kind {kind!r}; "
                f"that needs supports_target on every one of them, but {lacking} define none"
            )


def _check_aliases(state: _RegistryState, backend: Backend, replacing: str | None) -> None:
    for other in state.backends.values():
        if other.name == replacing or other is backend:
            continue
        for alias, kind in backend.kind_aliases.items():
            theirs = other.kind_aliases.get(alias)
            if theirs is not None and theirs != kind:
                raise BackendConflictError(
                    f"backend {backend.name!r} declares target kind alias {alias!r} -> "
                    f"{kind!r}, but backend {other.name!r} declares it -> {theirs!r}; "
                    "an alias has one meaning"
                )


def _unindex(state: _RegistryState, backend: Backend) -> None:
    for kind in backend.target_kinds:
        names = state.by_kind.get(kind)
        if names is None:
            continue
        if backend.name in names:
            names.remove(backend.name)
        if not names:
            # An empty entry would look like "this kind is served" and stop lazy loading.
            del state.by_kind[kind]


def _register(state: _RegistryState, backend: Backend, override: bool) -> Backend:
    existing = state.backends.get(backend.name)
    if existing is backend:
        return backend
    if existing is not None and not override:
        raise BackendConflictError(
            f"a different backend is already registered under the name {backend.name!r} "
            f"(serving {list(existing.target_kinds)}); pass override=True to replace it"
        )
    _check_shared_kinds(state, backend, replacing=backend.name if existing else None)
    _check_aliases(state, backend, replacing=backend.name if existing else None)
    if existing is not None:
        _unindex(state, existing)
    state.backends[backend.name] = backend
    for kind in backend.target_kinds:
        state.by_kind.setdefault(kind, []).append(backend.name)
    return backend


def register_backend(backend: Backend, *, override: bool = False) -> Backend:
    """Add ``backend`` to the registry and return it.

    Registering the same descriptor object again is a no-op. A backend that
    shares a target kind with another needs ``supports_target`` on both.

    Args:
        backend: the descriptor.
        override: replace a different descriptor already registered under
            ``backend.name``; the old one leaves the per-kind index.

    Raises:
        TypeError: ``backend`` is not a `Backend`.
        BackendConflictError: the name is taken (without ``override``), a
            shared kind lacks ``supports_target``, or another backend gives one
            of its `Backend.kind_aliases` a different meaning.
    """
    if not isinstance(backend, Backend):
        raise TypeError(
            f"register_backend: expected a tl_backend_api.Backend, got {type(backend).__name__}"
        )
    with _lock:
        return _register(_state, backend, override)


def _describe_entry_point(entry_point: EntryPointLike) -> str:
    return f"{entry_point.name} = {entry_point.value}"


def _load_entry_point(state: _RegistryState, entry_point: EntryPointLike) -> None:
    kind = entry_point.name

    def fail(error: str, details: str = "") -> None:
        state.failures.append(
            PluginLoadFailure(
                kind=kind,
                entry_point=_describe_entry_point(entry_point),
                distribution=_distribution_name(entry_point),
                error=error,
                details=details,
            )
        )

    try:
        loaded = entry_point.load()
    except (Exception, SystemExit) as exc:  # a broken plugin must not break discovery
        fail(f"{type(exc).__name__}: {exc}", traceback.format_exc())
        return
    if not isinstance(loaded, Backend):
        fail(
            f"expected the entry point to name a tl_backend_api.Backend, got {type(loaded).__name__}"
        )
        return
    if kind not in loaded.target_kinds:
        fail(
            f"the entry point's name is the kind it serves, {kind!r}, but backend "
            f"{loaded.name!r} owns only {list(loaded.target_kinds)}"
        )
        return
    existing = state.backends.get(loaded.name)
    if existing is not None and existing is not loaded:
        # An explicit registration (or an earlier package) wins; say so.
        fail(
            f"backend name {loaded.name!r} is already registered by another descriptor; "
            "this entry point's descriptor was ignored"
        )
        return
    try:
        _register(state, loaded, override=False)
    except BackendConflictError as exc:
        fail(f"{type(exc).__name__}: {exc}")


def _load_held(state: _RegistryState, entry_point: EntryPointLike) -> None:
    """`_load_entry_point` with Ctrl-C held until the backend is imported and registered:
    a package import cut short can leave registrations behind that fail its next import
    (tl_runtime.interrupts), and a half-registered backend would be missing for good."""
    with interrupts_held():
        _load_entry_point(state, entry_point)


def _ensure_kind_loaded(state: _RegistryState, kind: str) -> None:
    if kind in state.by_kind or kind in state.loaded_kinds:
        return
    # Marked first: a plugin that asks the registry while it loads is not loaded again.
    state.loaded_kinds.add(kind)
    try:
        for entry_point in state.entry_points():
            if entry_point.name == kind:
                _load_held(state, entry_point)
    except BaseException:  # interrupted: the kind is still to be loaded next time
        state.loaded_kinds.discard(kind)
        raise


def _ensure_all_loaded(state: _RegistryState) -> None:
    if state.all_loaded:
        return
    state.all_loaded = True
    try:
        for entry_point in state.entry_points():
            if entry_point.name not in state.loaded_kinds:
                _load_held(state, entry_point)
    except BaseException:  # interrupted: what is left is loaded next time
        state.all_loaded = False
        raise
    state.loaded_kinds.update(ep.name for ep in state.entry_points())


def _ensure_callbacks(backend: Backend) -> None:
    if id(backend) in _callbacks_done:
        return
    for name, function in backend.callbacks.items():
        try:
            _register_global(name, function)
        except Exception as exc:
            raise BackendError(
                f"backend {backend.name!r}: registering callback {name!r} as a tvm-ffi "
                f"global failed: {exc}"
            ) from exc
    _callbacks_done[id(backend)] = backend


def _failures_text(failures: Iterable[PluginLoadFailure]) -> str:
    return "\n".join("  - " + failure.describe() for failure in failures)


def backend_for_target(normalized: Target) -> Backend:
    """Return the one backend that serves the TVM target ``normalized``.

    Loads the entry points of the target's kind the first time that kind
    is asked for (and no registered backend already serves it); registers
    the chosen backend's callbacks on its first resolution. Callers with a
    target in any user form (an alias, ``"auto"``) use
    `tl_backend_api.kinds.resolve_backend`, which resolves it first.

    Raises:
        PluginImportError: no backend serves the kind and a package
            declaring it failed to load (named, with its error).
        BackendNotFoundError: no backend serves the kind, or none accepts the target.
        AmbiguousBackendError: several accept it; the message names them.
    """
    kind = str(normalized.kind.name)
    with _lock:
        state = _state
        _ensure_kind_loaded(state, kind)
        candidates = [state.backends[name] for name in state.by_kind.get(kind, [])]
        failures = [f for f in state.failures if f.kind == kind]
        if not candidates:
            if failures:
                raise PluginImportError(
                    f"no backend for target kind {kind!r}: the package(s) declaring it "
                    f"failed to load:\n{_failures_text(failures)}"
                )
            served = sorted(state.by_kind)
            raise BackendNotFoundError(
                f"no backend serves target kind {kind!r} (target {describe_target(normalized)}); "
                f"registered backends serve {served}. Install the tl-codegen package for "
                f"{kind!r}, or check `python -m tl_backend_api` for what is installed."
            )
        if len(candidates) == 1 and candidates[0].supports_target is None:
            chosen = candidates[0]
        else:
            matches = [backend for backend in candidates if backend.accepts(normalized)]
            if len(matches) != 1:
                error = AmbiguousBackendError if matches else BackendNotFoundError
                which = matches if matches else candidates
                verdict = "several accept it" if matches else "none of them accepts it"
                raise error(
                    f"target {describe_target(normalized)}: backends {[b.name for b in which]} "
                    f"serve kind {kind!r} and {verdict}; exactly one must"
                )
            chosen = matches[0]
        for failure in failures:
            if failure.entry_point not in state.warned_failures:
                state.warned_failures.add(failure.entry_point)
                warnings.warn(
                    f"a tl.backends plugin for kind {kind!r} failed to load: {failure.describe()}",
                    RuntimeWarning,
                    stacklevel=2,
                )
        _ensure_callbacks(chosen)
        return chosen


def get_backend(name: str) -> Backend:
    """Return the backend registered under ``name`` (loading every entry point if needed).

    Raises:
        BackendNotFoundError: no backend has that name; lists the known names
            and any plugin that failed to load.
    """
    with _lock:
        state = _state
        found = state.backends.get(name)
        if found is None:
            _ensure_all_loaded(state)
            found = state.backends.get(name)
        if found is None:
            message = f"no backend named {name!r}; expected one of {sorted(state.backends)}"
            if state.failures:
                message += f"\nplugins that failed to load:\n{_failures_text(state.failures)}"
            raise BackendNotFoundError(message)
        return found


def list_backends() -> tuple[Backend, ...]:
    """Every registered backend, sorted by name, after loading every entry point.

    Never raises because a plugin is broken: those are in `discovery_errors`.
    """
    with _lock:
        _ensure_all_loaded(_state)
        return tuple(_state.backends[name] for name in sorted(_state.backends))


def registered_backends() -> tuple[Backend, ...]:
    """The backends registered so far, sorted by name, without loading any entry point."""
    with _lock:
        return tuple(_state.backends[name] for name in sorted(_state.backends))


def discovery_errors() -> tuple[PluginLoadFailure, ...]:
    """The entry points that failed to load so far (`list_backends` loads them all)."""
    with _lock:
        return tuple(_state.failures)


def registered_kinds() -> Mapping[str, tuple[str, ...]]:
    """A snapshot: target kind -> names of the backends serving it (none empty)."""
    with _lock:
        return {kind: tuple(names) for kind, names in _state.by_kind.items()}


@contextlib.contextmanager
def isolated_registry(
    entry_points: Iterable[EntryPointLike] | None = None,
    *,
    discover: bool = True,
) -> Iterator[None]:
    """Run a block against a fresh, empty registry; restore the previous one after.

    For tests: nothing registered inside leaks out, nothing outside leaks in.

    Args:
        entry_points: the entry points discovery sees inside the block;
            default the installed ``tl.backends`` ones.
        discover: False hides every entry point (only explicit registrations count).
    """
    if not discover:
        source: Callable[[], Iterable[EntryPointLike]] = list
    elif entry_points is not None:
        fixed = list(entry_points)

        def source() -> Iterable[EntryPointLike]:
            return fixed

    else:
        source = _installed_entry_points
    global _state
    with _lock:
        saved = _state
        _state = _RegistryState(entry_point_source=source)
    try:
        yield
    finally:
        with _lock:
            _state = saved
