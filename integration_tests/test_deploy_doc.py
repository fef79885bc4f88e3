"""docs/deploy.md documents every manifest field: the keys of its field table and the keys
a written ``manifest.json`` holds are the same set, so neither can drift from the other.

Keys are written as in the table: ``a.b`` is key ``b`` of object ``a``, ``a[]`` an item of
the list of objects ``a`` (``a[].b`` a key of such an item); a list of plain values is
just ``a``. ``versions`` is a free mapping (its keys are distribution names), and
``target`` an open object (``kind`` plus the target's options), whose option keys are
not fields.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import tl_runtime
from tl_runtime import LaunchArgument, LaunchSpec, Manifest, ParamSpec

DOC = Path(__file__).resolve().parents[1] / "docs" / "deploy.md"
SECTION = re.compile(r"^## The artifact format \(`manifest\.json`, schema version (\d+)\)$", re.M)

#: Objects whose keys are data, not fields: only the object itself is a field.
FREE_MAPPINGS = frozenset({"versions"})
#: Open objects: their documented fields; any other key is an option of the target.
OPEN_OBJECTS = {"target": frozenset({"kind"})}


def manifest_keys(document: Any, prefix: str = "") -> set[str]:
    """Every field path of a manifest JSON object (the rules in the module docstring)."""
    keys: set[str] = set()
    for name, value in document.items():
        path = f"{prefix}{name}"
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            keys.add(f"{path}[]")
            for item in value:
                keys |= manifest_keys(item, f"{path}[].")
            continue
        keys.add(path)
        if isinstance(value, dict) and path not in FREE_MAPPINGS:
            fields = OPEN_OBJECTS.get(path)
            inner = value if fields is None else {k: v for k, v in value.items() if k in fields}
            keys |= manifest_keys(inner, f"{path}.")
    return keys


def documented_keys(text: str) -> set[str]:
    """The first-column keys of the field table in docs/deploy.md's artifact-format section."""
    match = SECTION.search(text)
    assert match is not None, "docs/deploy.md lost its '## The artifact format' section"
    section = text[match.end() :].split("\n## ", 1)[0].split("\n### ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {row.split("|")[1].strip().strip("`") for row in rows}


def every_field_manifest() -> Manifest:
    """A manifest in which every optional field is present (a strided tensor, a scalar,
    an inout, an output, launches with each kind of argument, source-only execution)."""
    return Manifest(
        name="every",
        entry_symbol="every_kernel",
        params=(
            ParamSpec("A", "float32", shape=("n", 4), strides=(4, 1), alignment=16),
            ParamSpec("alpha", "float32", kind="scalar"),
            ParamSpec("acc", "float32", shape=("n",), role="inout"),
            ParamSpec("B", "float32", shape=("n", 4), role="output"),
        ),
        out_idx=(3,),
        target={"kind": "gpu", "arch": "v9"},
        execution_backend="source",
        adapter=None,
        runnable_with=("compiled",),
        library="every.src",
        launches=(
            LaunchSpec(
                "every_kernel",
                grid=("((n + 127) // 128)", 1),
                block=(128,),
                dynamic_shared_memory="n * 4",
                arguments=(
                    LaunchArgument("buffer", "A", "float32"),
                    LaunchArgument("scalar", "alpha", "float32"),
                    LaunchArgument("dim", "n", "int32"),
                    LaunchArgument("workspace", "W", "float32", "n * 16"),
                ),
            ),
        ),
        argument_device_types=(2,),
        index_bits=64,
        stack_bytes=1024,
        versions={"tl-runtime": tl_runtime.__version__},
    )


def written_document(tmp_path: Path) -> dict[str, Any]:
    directory = tl_runtime.write_artifact(
        tmp_path / "every", every_field_manifest(), {"every.src": b"x"}
    )
    document: dict[str, Any] = json.loads((directory / "manifest.json").read_text())
    return document


def test_the_page_documents_every_manifest_field_and_only_those(tmp_path: Path) -> None:
    produced = manifest_keys(written_document(tmp_path))
    documented = documented_keys(DOC.read_text(encoding="utf-8"))
    assert produced - documented == set(), "manifest fields missing from docs/deploy.md's table"
    assert documented - produced == set(), "docs/deploy.md documents fields no manifest has"


def test_the_page_names_the_schema_version_this_runtime_writes(tmp_path: Path) -> None:
    match = SECTION.search(DOC.read_text(encoding="utf-8"))
    assert match is not None
    assert int(match.group(1)) == tl_runtime.SCHEMA_VERSION
    assert written_document(tmp_path)["schema_version"] == tl_runtime.SCHEMA_VERSION


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ({"a": 1, "b": {"c": [1, 2]}}, {"a", "b", "b.c"}),
        ({"l": [{"x": 1}, {"y": {"z": None}}]}, {"l[]", "l[].x", "l[].y", "l[].y.z"}),
        (
            {"versions": {"tl-runtime": "1"}, "target": {"kind": "k", "arch": "a"}},
            {
                "versions",
                "target",
                "target.kind",
            },
        ),
    ],
)
def test_the_key_rules(document: dict[str, Any], expected: set[str]) -> None:
    assert manifest_keys(document) == expected


def test_a_field_missing_from_the_table_is_caught() -> None:
    text = DOC.read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| `launches[].symbol`"))
    assert "launches[].symbol" not in documented_keys(text.replace(row + "\n", ""))
