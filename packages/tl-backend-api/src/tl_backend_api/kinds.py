"""Targets as users write them, resolved against the registered backends.

`normalize_target` (in `tl_backend_api.target`, below the registry) is pure
syntax. Here, above the registry, a backend's kind alias (``"hip"``) becomes
its TVM kind and ``"auto"`` the kind the backends' device probes pick
(`resolve_target`); `resolve_backend` then finds the backend serving it.
Nothing here names a target kind: every answer comes from the `Backend`
descriptors in the registry (their `kind_aliases`, `auto_kind`,
`auto_priority`, `is_active` and `host_kind`), so a backend package adds
its own kinds, aliases and device probe without an edit here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from tvm.target import Target

from tl_backend_api.descriptors import Backend
from tl_backend_api.errors import BackendConflictError, BackendNotFoundError
from tl_backend_api.registry import backend_for_target, list_backends, registered_backends
from tl_backend_api.target import TargetLike, normalize_target, tvm_target_kinds


def _alias_in(backends: tuple[Backend, ...], name: str) -> str | None:
    meanings = {backend.kind_aliases[name] for backend in backends if name in backend.kind_aliases}
    if len(meanings) > 1:
        declaring = sorted(b.name for b in backends if name in b.kind_aliases)
        raise BackendConflictError(
            f"target kind alias {name!r} is declared by backends {declaring} for different "
            f"kinds {sorted(meanings)}; exactly one meaning is allowed"
        )
    return next(iter(meanings), None)


def canonical_kind(name: str) -> str:
    """The target kind ``name`` stands for: a backend's `kind_aliases` entry, else ``name``.

    Looks at the registered backends first and loads every ``tl.backends``
    entry point only when none of them declares ``name`` (callers ask only
    for names that are not TVM kinds, so ordinary kinds never load plugins).

    Raises:
        BackendConflictError: two backends give the alias different meanings.
    """
    found = _alias_in(registered_backends(), name)
    if found is None:
        found = _alias_in(list_backends(), name)
    return name if found is None else found


def auto_candidates() -> tuple[Backend, ...]:
    """The backends ``"auto"`` may pick, in the order it tries them.

    Every installed backend with an `auto_kind`, highest `auto_priority`
    first (ties: backend name order). Loads every entry point.
    """
    eligible = [backend for backend in list_backends() if backend.auto_kind is not None]
    return tuple(sorted(eligible, key=lambda backend: (-backend.auto_priority, backend.name)))


def detect_auto_target_kind() -> str:
    """Return the target kind ``"auto"`` stands for on this machine.

    Walks `auto_candidates` and returns the `auto_kind` of the first whose
    `Backend.is_active` probe says a device is present; the backend running
    on the host CPU declares the lowest priority and a probe that always
    says yes, so it is the fallback.

    Raises:
        BackendNotFoundError: no installed backend takes part in ``"auto"``
            or none of their probes says yes.
        TypeError: a probe returned something other than a bool.
    """
    candidates = auto_candidates()
    for backend in candidates:
        kind = backend.auto_kind
        if kind is not None and backend.device_present():
            return kind
    tried = [f"{b.name} (kind {b.auto_kind!r}, priority {b.auto_priority})" for b in candidates]
    raise BackendNotFoundError(
        "target 'auto': expected an installed backend with an auto_kind whose device probe "
        f"says a device is present, got none (tried {tried or 'no backend'}); install a "
        "backend package, or name a target kind"
    )


def _kind_meant(name: str) -> str:
    """TVM's kind ``name``, or the kind a backend declares ``name`` an alias of."""
    return name if name in tvm_target_kinds() else canonical_kind(name)


def _in_tvm_terms(target: TargetLike) -> TargetLike:
    """``target`` with ``"auto"`` and a kind alias replaced by the TVM kind they stand for."""
    if isinstance(target, str):
        stripped = target.strip()
        if stripped == "auto":
            return {"kind": detect_auto_target_kind()}
        if stripped.startswith("{"):
            try:
                loaded = json.loads(stripped)
            except json.JSONDecodeError:
                return target  # normalize_target reports the malformed JSON
            return _in_tvm_terms(loaded) if isinstance(loaded, dict) else target
        head, _, options = stripped.partition(" ")
        if head and "/" not in head:  # a TVM tag such as nvidia/nvidia-a100 has no alias
            kind = _kind_meant(head)
            return f"{kind} {options}".strip() if kind != head else target
        return target
    if isinstance(target, Mapping) and isinstance(target.get("kind"), str):
        kind = _kind_meant(str(target["kind"]))
        return {**target, "kind": kind} if kind != target["kind"] else target
    return target


def resolve_target(target: TargetLike, host: TargetLike | None = None) -> Target:
    """Turn any target form users may write into a `tvm.target.Target`.

    Like `normalize_target`, and also: a kind alias a backend declares
    (``"hip"`` for ``rocm``) names its TVM kind, and ``"auto"`` the kind the
    installed backends' device probes pick (`detect_auto_target_kind`). The
    host target is resolved the same way.

    Raises:
        TargetError: a value of another type, or TVM refuses it.
        BackendNotFoundError: ``"auto"`` found no backend whose device is present.
        BackendConflictError: two backends give an alias different meanings.
    """
    resolved_host = None if host is None else _in_tvm_terms(host)
    return normalize_target(_in_tvm_terms(target), resolved_host)


def target_kind(target: TargetLike) -> str:
    """The TVM kind name ``target`` stands for (`resolve_target`, then its kind).

    Raises:
        everything `resolve_target` raises.
    """
    return str(resolve_target(target).kind.name)


def resolve_backend(target: TargetLike) -> Backend:
    """Return the one backend that serves ``target`` (any form `resolve_target` takes).

    Raises:
        TargetError: ``target`` cannot be resolved.
        PluginImportError: no backend serves the kind and a package
            declaring it failed to load (named, with its error).
        BackendNotFoundError: no backend serves the kind, or none accepts the target.
        AmbiguousBackendError: several accept it; the message names them.
    """
    return backend_for_target(target if isinstance(target, Target) else resolve_target(target))


def is_host_target(target: TargetLike) -> bool:
    """True when the backend serving ``target`` runs its kernels on the host CPU.

    Derived from the descriptor (`Backend.runs_on_host`: it declares no
    `host_kind`), never from the kind's name.

    Raises:
        everything `resolve_backend` raises.
    """
    return resolve_backend(target).runs_on_host
