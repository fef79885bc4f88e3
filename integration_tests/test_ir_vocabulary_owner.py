"""The IR's loop-kind annotation key has one owner: ``tl_ir.launch.LOOP_KIND_KEY``.

Every other package reads the constant; a string literal spelling the key outside
tl_ir is a second definition that can drift, and this test fails on it.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tl_ir.launch import LOOP_KIND_KEY

ROOT = Path(__file__).resolve().parents[1]


def _literal_uses(path: Path, value: str) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value == value
    ]


def test_the_loop_kind_key_is_spelled_only_in_tl_ir() -> None:
    offenders = []
    for path in sorted(ROOT.glob("packages/*/src/**/*.py")):
        if path.is_relative_to(ROOT / "packages" / "tl-ir"):
            continue
        offenders += [
            f"{path.relative_to(ROOT)}:{line}" for line in _literal_uses(path, LOOP_KIND_KEY)
        ]
    assert offenders == [], f"spell the key as tl_ir.launch.LOOP_KIND_KEY: {offenders}"


def test_the_check_finds_a_literal(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(f'KEY = "{LOOP_KIND_KEY}"\n"""a docstring naming {LOOP_KIND_KEY}"""\n')
    assert _literal_uses(sample, LOOP_KIND_KEY) == [1]
