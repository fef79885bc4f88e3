"""Execution adapters, found through the entry-point group ``tl.adapters``.

An adapter is a class providing the ``Adapter`` protocol (``tl_runtime.adapters.base``).
A package ships one by declaring it in its ``pyproject.toml``::

    [project.entry-points."tl.adapters"]
    my_launcher = "my_package.launcher:MyLauncherAdapter"

The entry-point name is the adapter key (the manifest's ``execution.adapter`` and the
backend descriptor's ``adapter``); the value names the class, whose ``key`` must equal it.
tl-runtime declares its own host adapters (``tvm_ffi``, ``cython``) the same way; each
device's launcher is a plug-in distribution of its own that registers in this group.

Looking up a key stays cheap, because ``tl_runtime.load`` runs on the cache-hit path of
every fresh process: tl-runtime's own adapters are resolved from a table in this module
that mirrors its entry points (a test keeps the two equal), without reading any package
metadata, and only the requested module is imported. Every installed distribution is
scanned only for a key tl-runtime does not declare, and by ``adapter_keys()``. tl-runtime's
own keys therefore cannot be replaced by another package.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from tl_runtime.errors import AdapterUnavailableError
from tl_runtime.fork_safety import ForkSafeLock

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from tl_runtime.adapters.base import Adapter, Availability

ENTRY_POINT_GROUP = "tl.adapters"
"""The entry-point group adapters are published under (name = key, value = the class)."""

_RUNTIME_DISTRIBUTION = "tl-runtime"

OWN_ADAPTERS: Mapping[str, str] = {
    "tvm_ffi": "tl_runtime.adapters.tvm_ffi_adapter:TvmFfiAdapter",
    "cython": "tl_runtime.adapters.cython_adapter:CythonAdapter",
}
"""tl-runtime's own adapters, key -> ``module:Class``: the same as the ``tl.adapters``
entry points its pyproject.toml declares (a test keeps them equal)."""


class _AdapterPoint(Protocol):
    """What a lookup needs of an entry point: its name, value and ``load``."""

    @property
    def name(self) -> str: ...

    @property
    def value(self) -> str: ...

    def load(self) -> Any: ...


class _OwnAdapterPoint:
    """One of tl-runtime's own adapters, loadable without reading package metadata."""

    def __init__(self, name: str, value: str) -> None:
        self.name = name
        self.value = value

    def load(self) -> Any:
        import importlib

        module, _, attribute = self.value.partition(":")
        return getattr(importlib.import_module(module), attribute)


_lock = ForkSafeLock(reentrant=True)  # re-entrant: _entry_point builds its hint via adapter_keys()
_own: dict[str, _AdapterPoint] | None = None
_installed: dict[str, list[EntryPoint]] | None = None
_classes: dict[str, type[Adapter]] = {}


def _own_entry_points() -> Mapping[str, _AdapterPoint]:
    """tl-runtime's own adapters (from ``OWN_ADAPTERS``; no metadata is read)."""
    global _own
    if _own is None:
        _own = {key: _OwnAdapterPoint(key, value) for key, value in OWN_ADAPTERS.items()}
    return _own


def _installed_entry_points() -> Mapping[str, list[EntryPoint]]:
    """Every installed distribution's adapter entry points, by key."""
    global _installed
    if _installed is None:
        import importlib.metadata

        found: dict[str, list[EntryPoint]] = {}
        for point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            same = [p for p in found.get(point.name, []) if p.value == point.value]
            if not same:
                found.setdefault(point.name, []).append(point)
        _installed = found
    return _installed


def adapter_keys() -> frozenset[str]:
    """Return the keys of every installed adapter (tl-runtime's and other packages').

    Reads the entry-point group ``tl.adapters`` of every installed distribution; imports
    no adapter module.
    """
    with _lock:
        return frozenset(_own_entry_points()) | frozenset(_installed_entry_points())


def _installed_hint() -> str:
    keys = sorted(adapter_keys())
    if not keys:
        return (
            f"no adapter is installed (none in the entry-point group {ENTRY_POINT_GROUP!r}; "
            "is tl-runtime installed with pip, not only put on the path?)"
        )
    return f"installed adapters: {keys}"


def _entry_point(key: str) -> _AdapterPoint:
    own = _own_entry_points().get(key)
    if own is not None:
        return own
    candidates = _installed_entry_points().get(key, [])
    if len(candidates) > 1:
        sources = sorted(f"{p.value} (from {_distribution_name(p)})" for p in candidates)
        raise AdapterUnavailableError(
            f"adapter {key!r} is declared by more than one installed package: {sources}; "
            "uninstall all but one"
        )
    if not candidates:
        raise AdapterUnavailableError(f"adapter {key!r} is not installed; {_installed_hint()}")
    return candidates[0]


def _distribution_name(point: _AdapterPoint) -> str:
    if isinstance(point, _OwnAdapterPoint):
        return _RUNTIME_DISTRIBUTION
    dist = getattr(point, "dist", None)
    return str(getattr(dist, "name", "an unknown distribution"))


def _protocol_problems(key: str, adapter: Any) -> list[str]:
    """What ``adapter`` lacks of the ``Adapter`` protocol (empty when it provides it)."""
    if not isinstance(adapter, type):
        return [f"expected a class, got {type(adapter).__name__}"]
    problems = []
    if getattr(adapter, "key", None) != key:
        problems.append(
            f"its 'key' attribute must equal the entry-point name {key!r}, got "
            f"{getattr(adapter, 'key', None)!r}"
        )
    for name in ("probe", "make_call"):
        if not callable(getattr(adapter, name, None)):
            problems.append(f"it has no callable {name!r}")
    return problems


def get_adapter(key: str) -> type[Adapter]:
    """Return the adapter class installed under ``key``, importing only its module.

    Args:
        key: an adapter key (an entry-point name of the group ``tl.adapters``).

    Returns:
        The class; ``key`` is its ``key`` attribute.

    Raises:
        TypeError: ``key`` is not a string.
        AdapterUnavailableError: no installed package declares ``key`` (the message lists
            the installed keys), two packages declare it, its module fails to import, or
            what it names does not provide the ``Adapter`` protocol.
    """
    if not isinstance(key, str):
        raise TypeError(f"adapter key: expected a str, got {type(key).__name__}")
    with _lock:
        cached = _classes.get(key)
        if cached is not None:
            return cached
        point = _entry_point(key)
    try:
        adapter = point.load()
    except Exception as exc:
        raise AdapterUnavailableError(
            f"adapter {key!r} ({point.value}, from {_distribution_name(point)}) failed to "
            f"load: {type(exc).__name__}: {exc}"
        ) from None
    problems = _protocol_problems(key, adapter)
    if problems:
        raise AdapterUnavailableError(
            f"adapter {key!r} ({point.value}) does not provide the Adapter protocol: "
            + "; ".join(problems)
        )
    with _lock:
        return _classes.setdefault(key, adapter)


def adapter_availability(key: str) -> Availability:
    """Return whether adapter ``key`` can run here; ``.reason`` says why not. Never raises.

    Unknown keys, adapters that fail to load and probes that raise are unavailable.
    """
    from tl_runtime.adapters.base import Availability

    try:
        adapter = get_adapter(key)
    except (TypeError, AdapterUnavailableError) as exc:
        return Availability(False, str(exc))
    try:
        availability = adapter.probe()
    except Exception as exc:  # a probe must not raise; report it as the reason
        return Availability(False, f"adapter {key!r} probe raised {type(exc).__name__}: {exc}")
    return availability


def _forget_installed_adapters() -> None:
    """Drop the cached entry points and classes (tests install and remove adapters)."""
    global _own, _installed
    with _lock:
        _own = None
        _installed = None
        _classes.clear()


__all__ = [
    "ENTRY_POINT_GROUP",
    "adapter_availability",
    "adapter_keys",
    "get_adapter",
]
