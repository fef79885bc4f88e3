"""The IR's vocabulary has one owner: tl_ir.

The loop-kind annotation key (``tl_ir.launch.LOOP_KIND_KEY``) and the buffer scope
names (``tl_ir.scopes``: ``"shared"``, ``"shared.dyn"``, ``"local.fragment"``,
``"local"``, ``"local.var"``, ``"global"``, and the barrier scope ``"warp"``) are read
as constants by every other package; a string literal spelling one of them outside
tl_ir is a second definition that can drift, and these tests fail on it.

tl_runtime is checked too: it names no scope today (it cannot import tl_ir, so a
scope it ever needs must come with a reason and an exemption here).

Rebuilding a loop (a ``tirx.For`` with a changed body, kind or annotations) is
``tl_ir.launch.rebuild_loop``; a ``tirx.For(x.loop_var, ...)`` outside tl_ir copies
the loop's fields by hand again and fails the last test.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tl_ir import scopes
from tl_ir.launch import LOOP_KIND_KEY

ROOT = Path(__file__).resolve().parents[1]

#: Every scope name tl_ir owns, the barrier scope included.
SCOPE_NAMES = frozenset({*scopes.SCOPES, scopes.WARP})


def _literal_uses(path: Path, values: frozenset[str]) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in values
    ]


def _loop_copies(path: Path) -> list[int]:
    """Lines of ``<module>.For(<x>.loop_var, ...)``: a loop rebuilt field by field."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "For"
        and node.args
        and isinstance(node.args[0], ast.Attribute)
        and node.args[0].attr == "loop_var"
    ]


def _sources_outside_tl_ir() -> list[Path]:
    return [
        path
        for path in sorted(ROOT.glob("packages/*/src/**/*.py"))
        if not path.is_relative_to(ROOT / "packages" / "tl-ir")
    ]


def test_the_loop_kind_key_is_spelled_only_in_tl_ir() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in _sources_outside_tl_ir()
        for line, _ in _literal_uses(path, frozenset({LOOP_KIND_KEY}))
    ]
    assert offenders == [], f"spell the key as tl_ir.launch.LOOP_KIND_KEY: {offenders}"


# Files where a scope's spelling means something else, and what: not a scope.
NOT_SCOPE_SPELLINGS = {
    "packages/tl-jit/src/tl_jit/distributed.py": "Ray's address 'local' (a new local cluster)",
}


def test_scope_names_are_spelled_only_in_tl_ir() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {value!r}"
        for path in _sources_outside_tl_ir()
        if path.relative_to(ROOT).as_posix() not in NOT_SCOPE_SPELLINGS
        for line, value in _literal_uses(path, SCOPE_NAMES)
    ]
    assert offenders == [], f"name scopes through tl_ir.scopes: {offenders}"


def test_loops_are_rebuilt_only_by_tl_ir() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in _sources_outside_tl_ir()
        for line in _loop_copies(path)
    ]
    assert offenders == [], f"rebuild a loop with tl_ir.launch.rebuild_loop: {offenders}"


def test_the_checks_find_what_they_look_for(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        f'KEY = "{LOOP_KIND_KEY}"\n'
        f'"""a docstring naming {LOOP_KIND_KEY} and shared"""\n'
        'SCOPES = ("shared", "local.fragment")\n'
        "loop = tirx.For(old.loop_var, old.min, old.extent, kind, body)\n"
        "fresh = tirx.For(var, 0, 8, kind, body)\n"
    )
    assert _literal_uses(sample, frozenset({LOOP_KIND_KEY})) == [(1, LOOP_KIND_KEY)]
    assert _literal_uses(sample, SCOPE_NAMES) == [(3, "shared"), (3, "local.fragment")]
    assert _loop_copies(sample) == [4]
