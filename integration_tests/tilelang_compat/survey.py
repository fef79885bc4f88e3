"""Run every corpus case on every target and rewrite the expected failures and README table.

``python -m integration_tests.tilelang_compat.survey`` (from the repository root) runs
each case on ``c``, ``llvm`` and ``cuda-nvcc`` in this process, then writes
``expected.py`` (the strict xfails the corpus test applies) and the results table
between the markers in ``README.md``. Run it after a fix turns an xfail into an XPASS.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
import tempfile
from pathlib import Path

from integration_tests.tilelang_compat.harness import build_for_cuda, run_on_cpu
from integration_tests.tilelang_compat.registry import (
    ALL_CASES,
    EXPECTED_FAILURES,
    NOTES,
    TARGETS,
)

HERE = Path(__file__).resolve().parent
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"


def _message(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    text = lines[0] if lines else type(exc).__name__
    text = re.sub(r"^/\S+/programs/(\w+\.py):(\d+): ", r"\1:\2: ", text)
    if isinstance(exc, AssertionError) and len(lines) > 1:
        text = "wrong numbers: " + " ".join(lines[:3])
    return text[:160]


def run_case(name: str, target: str) -> BaseException | None:
    """The exception ``name`` raises on ``target`` (None when it passes)."""
    case = ALL_CASES[name]
    try:
        if target == "cuda-nvcc":
            build_for_cuda(case, Path(tempfile.mkdtemp(prefix="tl-compat-")) / "cuda")
        else:
            run_on_cpu(case, target)
    except Exception as exc:
        return exc
    return None


def _exception_path(exc: BaseException) -> str:
    cls = type(exc)
    module = cls.__module__
    if module == "builtins":
        return cls.__qualname__
    # Prefer the public package that re-exports the class (tl_ir.errors.X -> tl_ir.X).
    top = module.partition(".")[0]
    if getattr(importlib.import_module(top), cls.__qualname__, None) is cls:
        return f"{top}.{cls.__qualname__}"
    return f"{module}.{cls.__qualname__}"


def _recorded(name: str, target: str) -> BaseException | None:
    """The failure expected.py records for ``name`` on ``target`` (None: it passes), as an
    exception of the recorded type whose message is the recorded reason."""
    recorded = EXPECTED_FAILURES.get((name, target))
    if recorded is None:
        return None
    kind, reason = recorded
    try:
        return kind(reason)
    except TypeError:  # a constructor that takes more than a message
        exc = kind.__new__(kind)
        exc.args = (reason,)
        return exc


def main(argv: list[str] | None = None) -> int:
    """Survey the corpus; rewrite expected.py and the README table; print the counts.
    With ``--table-only``, rewrite the README table from expected.py without running
    anything (after a merge of two branches' tables, or a change of the constructs
    column); cases added since the last survey must be surveyed, not tabled."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--table-only",
        action="store_true",
        help="rewrite the README table from expected.py without running the cases",
    )
    options = parser.parse_args(argv)
    results: dict[tuple[str, str], BaseException | None] = {}
    if options.table_only:
        results = {(n, t): _recorded(n, t) for n in ALL_CASES for t in TARGETS}
    else:
        os.environ.setdefault("TL_CACHE_DIR", tempfile.mkdtemp(prefix="tl-compat-cache-"))
        for name in ALL_CASES:
            for target in TARGETS:
                results[(name, target)] = outcome = run_case(name, target)
                status = (
                    "ok" if outcome is None else f"{type(outcome).__name__}: {_message(outcome)}"
                )
                print(f"{name} [{target}] {status}", flush=True)
        _write_expected(results)
    _write_readme(results)
    for target in TARGETS:
        passed = sum(results[(n, target)] is None for n in ALL_CASES)
        print(f"{target}: {passed}/{len(ALL_CASES)}")
    return 0


def _write_expected(results: dict[tuple[str, str], BaseException | None]) -> None:
    imports: set[str] = set()
    entries = []
    for (name, target), exc in results.items():
        if exc is None:
            continue
        path = _exception_path(exc)
        if "." in path:
            imports.add(path.rpartition(".")[0])
        reason = _message(exc).replace("\\", "\\\\").replace('"', '\\"')
        entries.append(
            f'    ("{name}", "{target}"): (\n        {path},\n        "{reason}",\n    ),'
        )
    # Written as ruff formats it: no import block without imports, an empty dict inline.
    header = "EXPECTED_FAILURES: dict[tuple[str, str], tuple[type[BaseException], str]] = {"
    text = [
        '"""Failures the corpus expects today (written by survey.py; do not edit by hand)."""',
        "",
        "from __future__ import annotations",
        "",
        *([*sorted(f"import {module}" for module in imports), ""] if imports else []),
        *([header, *entries, "}"] if entries else [header + "}"]),
        "",
    ]
    (HERE / "expected.py").write_text("\n".join(text))


_T_NAME = re.compile(r"\bT\.([A-Za-z_][A-Za-z0-9_]*)")
# Dtypes and annotations say nothing about the constructs a program exercises.
_NOT_CONSTRUCTS = frozenset(
    {"Tensor", "Buffer", "prim_func", "dtype", "float16", "bfloat16", "float32", "float64"}
    | {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"}
)


def construct_names(name: str) -> set[str]:
    """The ``T.`` names the case's program function uses (its source, read with ast), and
    those of the module's other functions it calls, transitively (a wrapper that computes
    a schedule and calls the kernel builder, a helper the kernel calls), dtypes and
    annotations left out: the constructs the case exercises."""
    import ast

    case = ALL_CASES[name]
    module_name, _, attribute = case.program.partition(":")
    # Read the file rather than import it: a program may fail at import (that is its error).
    source = (HERE / "programs" / f"{module_name}.py").read_text()
    functions = {
        node.name: node for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)
    }
    if attribute not in functions:
        return set(_T_NAME.findall(source)) - _NOT_CONSTRUCTS
    names: set[str] = set()
    pending, seen = [attribute], {attribute}
    while pending:
        node = functions[pending.pop()]
        names |= set(_T_NAME.findall(ast.get_source_segment(source, node) or ""))
        for inner in ast.walk(node):
            if isinstance(inner, ast.Name) and inner.id in functions and inner.id not in seen:
                seen.add(inner.id)
                pending.append(inner.id)
    return names - _NOT_CONSTRUCTS


def constructs(name: str) -> str:
    """`construct_names` as the README's table cell."""
    return ", ".join(f"`{n}`" for n in sorted(construct_names(name)))


def _cell(exc: BaseException | None) -> str:
    return "ok" if exc is None else f"`{type(exc).__name__}`"


def _write_readme(results: dict[tuple[str, str], BaseException | None]) -> None:
    rows = [
        "| kernel | TileLang source | constructs (`T.`) | c | llvm | cuda (nvcc) "
        "| error when it fails |"
    ]
    rows.append("| --- | --- | --- | --- | --- | --- | --- |")
    for name, case in ALL_CASES.items():
        outcomes = [results[(name, t)] for t in TARGETS]
        errors = []
        for exc in outcomes:
            if exc is not None and _message(exc) not in errors:
                errors.append(_message(exc))
        note = NOTES.get(name) if any(e is not None for e in outcomes) else None
        detail = "; ".join(e.replace("|", "\\|") for e in errors)
        if note:
            detail = f"**{note}** {detail}".strip()
        cells = " | ".join(_cell(e) for e in outcomes)
        rows.append(f"| `{name}` | `{case.source}` | {constructs(name)} | {cells} | {detail} |")
    counts = ", ".join(
        f"{t}: {sum(results[(n, t)] is None for n in ALL_CASES)}/{len(ALL_CASES)}" for t in TARGETS
    )
    table = "\n".join([f"Passing: {counts}.", "", *rows])
    readme = HERE / "README.md"
    text = readme.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    readme.write_text(text[:start] + "\n" + table + "\n" + text[end:])


if __name__ == "__main__":
    sys.exit(main())
