"""A readable table of the installed backends (``python -m tl_backend_api``, scripts/demo.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tl_backend_api.descriptors import (
    Backend,
    ExecutionBackendSpec,
    probe_availability,
    probe_buildable,
)
from tl_backend_api.registry import PluginLoadFailure, discovery_errors, list_backends


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(row: tuple[str, ...]) -> str:
        return "  ".join(
            cell.ljust(width) for cell, width in zip(row, widths, strict=True)
        ).rstrip()

    return [line(header), line(tuple("-" * w for w in widths)), *(line(r) for r in rows)]


def _build_needs(spec: ExecutionBackendSpec) -> str:
    if spec.build_hint:
        return spec.build_hint
    return "a compiler (see the backend's toolchains)" if spec.enable_device_compile else "nothing"


def _run_needs(backend: Backend, spec: ExecutionBackendSpec) -> str:
    if spec.adapter is None:
        runners = [s.name for s in backend.execution_backends if s.adapter is not None]
        instead = f"; export with {' or '.join(runners)} to run" if runners else ""
        return f"nothing here runs it (source only){instead}"
    return spec.install_hint or f"the {spec.adapter!r} adapter's dependencies"


def _answer(
    probe: Callable[[ExecutionBackendSpec], tuple[bool, str]], spec: ExecutionBackendSpec
) -> bool | str:
    try:
        return probe(spec)[0]
    except TypeError as exc:
        return f"probe broken: {exc}"


def backend_rows(backends: tuple[Backend, ...] | None = None) -> list[dict[str, Any]]:
    """One JSON-ready row per execution backend of ``backends`` (default: `list_backends`),
    in ``"auto"`` order, saying what building and running its artifacts need here.

    Each row: ``backend``, ``target_kinds``, ``order``, ``execution_backend``, ``aliases``,
    ``adapter`` (None: source only), ``device_code`` (``"compile"`` or ``"source only"``),
    ``builds_here`` and ``runs_here`` (True, False, or the text of a broken probe; probed
    once per process), ``build_needs`` and ``run_needs`` (what to install).
    """
    if backends is None:
        backends = list_backends()
    rows: list[dict[str, Any]] = []
    for backend in backends:
        for order, spec in enumerate(backend.execution_backends, start=1):
            rows.append(
                {
                    "backend": backend.name,
                    "target_kinds": list(backend.target_kinds),
                    "order": order,
                    "execution_backend": spec.name,
                    "aliases": list(spec.aliases),
                    "adapter": spec.adapter,
                    "device_code": "compile" if spec.enable_device_compile else "source only",
                    "builds_here": _answer(probe_buildable, spec),
                    "runs_here": (
                        False if spec.adapter is None else _answer(probe_availability, spec)
                    ),
                    "build_needs": _build_needs(spec),
                    "run_needs": _run_needs(backend, spec),
                }
            )
    return rows


def _cell(answer: bool | str) -> str:
    if isinstance(answer, str):
        return answer
    return "yes" if answer else "no"


def format_backend_report(
    backends: tuple[Backend, ...] | None = None,
    failures: tuple[PluginLoadFailure, ...] | None = None,
) -> str:
    """Render backends (default: `list_backends`) and plugin failures as text.

    One row per execution backend, in ``"auto"`` order: backend, target kinds, order,
    execution backend, adapter, whether its artifacts build and run here (probed once),
    then, per row, what building and running need.
    """
    rows = backend_rows(backends)
    if failures is None:
        failures = discovery_errors()
    lines = [f"registered backends: {len(backends if backends is not None else list_backends())}"]
    table: list[tuple[str, ...]] = []
    previous = ""
    for row in rows:
        first = row["backend"] != previous
        previous = row["backend"]
        table.append(
            (
                row["backend"] if first else "",
                ", ".join(row["target_kinds"]) if first else "",
                str(row["order"]),
                row["execution_backend"] + "".join(f" (alias {a})" for a in row["aliases"]),
                row["adapter"] if row["adapter"] is not None else "-",
                row["device_code"],
                _cell(row["builds_here"]),
                "-" if row["adapter"] is None else _cell(row["runs_here"]),
            )
        )
    if table:
        header = (
            "backend",
            "target kinds",
            "#",
            "execution backend",
            "adapter",
            "device code",
            "builds here",
            "runs here",
        )
        lines.extend(_table(header, table))
        lines.append("")
        lines.append("what each needs:")
        for row in rows:
            name = f"{row['backend']}/{row['execution_backend']}"
            lines.append(f"  {name}: build: {row['build_needs']}")
            lines.append(f"  {' ' * len(name)}  run:   {row['run_needs']}")
    if failures:
        lines.append("")
        lines.append(f"plugins that failed to load: {len(failures)}")
        lines.extend(f"  kind {f.kind!r}: {f.describe()}" for f in failures)
    return "\n".join(lines)
