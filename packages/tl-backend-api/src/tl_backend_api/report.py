"""A readable table of the installed backends (``python -m tl_backend_api``, scripts/demo.py)."""

from __future__ import annotations

from tl_backend_api.descriptors import Backend, probe_availability
from tl_backend_api.registry import PluginLoadFailure, discovery_errors, list_backends


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(row: tuple[str, ...]) -> str:
        return "  ".join(
            cell.ljust(width) for cell, width in zip(row, widths, strict=True)
        ).rstrip()

    return [line(header), line(tuple("-" * w for w in widths)), *(line(r) for r in rows)]


def format_backend_report(
    backends: tuple[Backend, ...] | None = None,
    failures: tuple[PluginLoadFailure, ...] | None = None,
) -> str:
    """Render backends (default: `list_backends`) and plugin failures as text.

    One row per execution backend, in ``"auto"`` order: backend, target
    kinds, order, execution backend, adapter, availability (probed once).
    """
    if backends is None:
        backends = list_backends()
    if failures is None:
        failures = discovery_errors()
    lines = [f"registered backends: {len(backends)}"]
    rows: list[tuple[str, ...]] = []
    for backend in backends:
        for order, spec in enumerate(backend.execution_backends, start=1):
            try:
                available, reason = probe_availability(spec)
                status = "yes" if available else f"no: {spec.install_hint or reason}"
            except TypeError as exc:
                status = f"probe broken: {exc}"
            rows.append(
                (
                    backend.name if order == 1 else "",
                    ", ".join(backend.target_kinds) if order == 1 else "",
                    str(order),
                    spec.name + "".join(f" (alias {alias})" for alias in spec.aliases),
                    spec.adapter if spec.adapter is not None else "-",
                    "compile" if spec.enable_device_compile else "source only",
                    status,
                )
            )
    if rows:
        header = (
            "backend",
            "target kinds",
            "#",
            "execution backend",
            "adapter",
            "device code",
            "available",
        )
        lines.extend(_table(header, rows))
    if failures:
        lines.append("")
        lines.append(f"plugins that failed to load: {len(failures)}")
        lines.extend(f"  kind {f.kind!r}: {f.describe()}" for f in failures)
    return "\n".join(lines)
