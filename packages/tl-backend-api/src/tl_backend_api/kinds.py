"""What the registered backends declare about target kinds: aliases, ``"auto"``, host or device.

Nothing here names a target kind: every answer comes from the `Backend`
descriptors in the registry (their `kind_aliases`, `auto_kind`,
`auto_priority`, `is_active` and `host_kind`), so a backend package adds
its own kinds, aliases and device probe without an edit here.
"""

from __future__ import annotations

from tl_backend_api.descriptors import Backend
from tl_backend_api.errors import BackendConflictError, BackendNotFoundError
from tl_backend_api.registry import list_backends, registered_backends, resolve_backend
from tl_backend_api.target import TargetLike


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


def is_host_target(target: TargetLike) -> bool:
    """True when the backend serving ``target`` runs its kernels on the host CPU.

    Derived from the descriptor (`Backend.runs_on_host`: it declares no
    `host_kind`), never from the kind's name.

    Raises:
        everything `resolve_backend` raises.
    """
    return resolve_backend(target).runs_on_host
