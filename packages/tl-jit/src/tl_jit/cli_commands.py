"""The ``tl`` commands that list, write and report: backends, compile, inspect, cache.

Each takes the parsed arguments and returns the exit status; with ``--json`` each prints
one JSON document on stdout instead of its text.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from tl_jit.cli_support import UsageError, resolve_kernel, visible

#: Where `print_json` writes while a --json command runs with stdout sent to stderr
#: (`json_document_only`); empty: stdout.
_json_streams: list[TextIO] = []


def print_json(value: Any) -> None:
    """Print ``value`` as indented JSON on stdout (the real one under
    `json_document_only`)."""
    stream = _json_streams[-1] if _json_streams else sys.stdout
    print(json.dumps(value, indent=2, default=str), file=stream)


@contextlib.contextmanager
def json_document_only() -> Iterator[None]:
    """While a ``--json`` command runs, whatever else prints to stdout (a kernel file's
    ``print``, a toolchain's notice) goes to stderr: stdout holds the one JSON document."""
    _json_streams.append(sys.stdout)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        _json_streams.pop()


def cmd_backends(args: argparse.Namespace) -> int:
    """``tl backends``: every execution backend, whether it builds and runs here, and
    what each needs."""
    from tl_backend_api import (
        backend_rows,
        detect_auto_target_kind,
        discovery_errors,
        format_backend_report,
    )

    if args.json:
        print_json(
            {
                "execution_backends": backend_rows(),
                "auto_target": detect_auto_target_kind(),
                "plugin_failures": [
                    {"kind": f.kind, "entry_point": f.entry_point, "error": f.error}
                    for f in discovery_errors()
                ],
            }
        )
        return 0
    print(format_backend_report())
    print(f'\ntarget "auto" here: {detect_auto_target_kind()!r}')
    return 0


def cmd_compile(args: argparse.Namespace) -> int:
    """``tl compile``: build FILE:FUNC into an artifact directory (never loaded here)."""
    import tl_runtime
    from tl_jit.export import check_destination, export_prim_func

    # Before the kernel is built, and by the flag's name (a raw errno on a temp path
    # came back for --out /proc/x).
    check_destination(args.out, args.force, name="--out")
    resolved = resolve_kernel(args)
    options = resolved.options
    out = export_prim_func(
        resolved.prim_func,
        args.out,
        out_idx=options.get("out_idx"),
        target=options.get("target", "auto"),
        target_host=options.get("target_host"),
        execution_backend=options.get("execution_backend", "auto"),
        pass_configs=options.get("pass_configs"),
        force=args.force,
    )
    manifest = tl_runtime.read_manifest(out, verify=False)
    report = {
        "artifact": str(out),
        "kernel": manifest.name,
        "target": manifest.target.get("kind"),
        "execution_backend": manifest.execution_backend,
        "adapter": manifest.adapter,
        "runnable_with": list(manifest.runnable_with),
        "files": [entry.path for entry in manifest.files],
    }
    if args.json:
        print_json(report)
        return 0
    runs = (
        f"loads with adapter {manifest.adapter}"
        if manifest.adapter is not None
        else "source only"
        + (
            f"; compile with {' or '.join(manifest.runnable_with)} to run it"
            if manifest.runnable_with
            else ""
        )
    )
    print(
        f"wrote {out} ({manifest.name}, target {report['target']}, execution backend "
        f"{manifest.execution_backend}: {runs})"
    )
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    """``tl inspect``: an artifact's manifest, files and sources (checked first)."""
    import tl_runtime

    directory = Path(args.directory)
    if not directory.is_dir():
        raise UsageError(f"{directory}: expected an artifact directory")
    # Read once (no link followed, special files refused): the sources shown below are
    # the bytes that were verified, not whatever the directory holds a moment later.
    snapshot = tl_runtime.read_artifact(directory, verify=True)
    manifest = snapshot.manifest
    if args.json:
        print_json(manifest.to_json())
        return 0

    def show(line: str) -> None:
        # The manifest's strings and the sources come from the artifact: a terminal
        # escape in them is shown, never sent to the terminal.
        print(visible(line))

    show(f"kernel:            {manifest.name} (entry {manifest.entry_symbol})")
    show(f"target:            {json.dumps(dict(manifest.target))}")
    adapter = manifest.adapter or "none: source only, runs with " + (
        ", ".join(manifest.runnable_with) or "no execution backend here"
    )
    show(f"execution backend: {manifest.execution_backend} (adapter {adapter})")
    show("params:")
    for index, param in enumerate(manifest.params):
        role = "output (out_idx)" if index in manifest.out_idx else param.role
        shape = "" if param.kind == "scalar" else str(list(param.shape))
        show(f"  {index}: {param.name:<12} {param.kind:<7} {param.dtype:<9} {shape:<20} {role}")
    if manifest.launches:
        show("launches:")
    for launch in manifest.launches:
        arguments = ", ".join(f"{a.kind} {a.name}" for a in launch.arguments)
        show(
            f"  {launch.symbol}: grid {list(launch.grid)} block {list(launch.block)} "
            f"shared {launch.dynamic_shared_memory} ({arguments})"
        )
    show("files:")
    for entry in manifest.files:
        show(f"  {entry.path:<30} {entry.role:<8} sha256 {entry.sha256[:16]}...")
    show("versions:")
    for name, version in sorted(manifest.versions.items()):
        show(f"  {name}: {version}")
    if not args.no_source:
        for entry in manifest.source_files:
            print()
            show(f"----- {entry.path} -----")
            text = snapshot.contents[entry.path].decode("utf-8", errors="replace")
            print(visible(text, keep_lines=True))
    return 0


def _cmd_cache_tuning(args: argparse.Namespace) -> int:
    """``tl cache tuning`` (list the saved autotuning results) and ``tl cache clear-tuning``."""
    import dataclasses

    from tl_jit import cache, tune_records

    if args.action == "tuning":
        records = tune_records.list_records()
        if args.json:
            print_json(
                [{**dataclasses.asdict(record), "path": str(record.path)} for record in records]
            )
        else:
            for record in records:
                print(record.format())
        return 0
    root = cache.default_cache().root
    removed = tune_records.clear_records()
    if args.json:
        print_json({"root": str(root), "removed_tuning_results": removed})
    else:
        print(f"removed {removed} tuning results from {root}")
    return 0


def cmd_cache(args: argparse.Namespace) -> int:
    """``tl cache info|clear|tuning|clear-tuning``."""
    from tl_jit import cache

    if args.action == "info":
        info = cache.info()
        if args.json:
            print_json(
                {
                    "root": str(info.root),
                    "disabled": info.disabled,
                    "kernels": info.kernels,
                    "frontend_entries": info.frontend_entries,
                    "autotune_entries": info.autotune_entries,
                    "size_bytes": info.size_bytes,
                }
            )
        else:
            print(info.format())
        return 0
    if args.action in ("tuning", "clear-tuning"):
        return _cmd_cache_tuning(args)
    root = cache.default_cache().root
    removed = cache.clear()
    if args.json:
        print_json({"root": str(root), "removed_kernels": removed})
    else:
        print(f"removed {removed} kernel entries from {root}")
    return 0
