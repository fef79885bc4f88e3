"""The artifact format: manifest validation, round trip, hashes and schema version."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tl_runtime
from tl_runtime import (
    ArtifactError,
    FileEntry,
    HashMismatchError,
    LaunchArgument,
    LaunchSpec,
    Manifest,
    ParamSpec,
    SchemaVersionError,
)


def _manifest(**changes: object) -> Manifest:
    fields: dict[str, object] = {
        "name": "k",
        "entry_symbol": "k",
        "params": (
            ParamSpec("A", "float32", shape=("n", 4)),
            ParamSpec("B", "float32", shape=("n", 4), role="output"),
            ParamSpec("alpha", "float64", kind="scalar"),
        ),
        "out_idx": (1,),
        "target": {"kind": "gpu", "arch": "v2"},
        "library": "k.so",
        "launches": (
            LaunchSpec(
                "k_kernel",
                grid=("(n + 127) // 128", 1, 1),
                block=(128, 1, 1),
                arguments=(
                    LaunchArgument("buffer", "A", "float32"),
                    LaunchArgument("buffer", "B", "float32"),
                    LaunchArgument("dim", "n", "int32"),
                    LaunchArgument("scalar", "alpha", "float64"),
                ),
            ),
        ),
        "versions": {"tl-runtime": "0.1.0"},
    }
    fields.update(changes)
    return Manifest(**fields)  # type: ignore[arg-type]


def test_round_trip_through_write_and_read(tmp_path: Path) -> None:
    draft = _manifest()
    out = tl_runtime.write_artifact(
        tmp_path, draft, {"k.so": b"binary", "k.cu": b"src"}, roles={"k.cu": "source"}
    )
    read = tl_runtime.read_manifest(out)
    assert read.params == draft.params
    assert read.launches == draft.launches
    assert read.out_idx == (1,)
    assert {f.path: f.role for f in read.files} == {"k.so": "library", "k.cu": "source"}
    assert read.files[0].sha256 == tl_runtime.sha256_file(tmp_path / "k.so")
    data = json.loads((tmp_path / "manifest.json").read_text())
    assert data["schema_version"] == tl_runtime.SCHEMA_VERSION
    assert data["params"][0]["shape"] == ["n", 4]


def test_negative_out_idx_is_normalized() -> None:
    assert _manifest(out_idx=(-2,)).out_idx == (1,)


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"out_idx": (0,)}, "role 'output'"),
        ({"out_idx": (5,)}, "indices into 3 params"),
        ({"out_idx": (1, 1)}, "no repeated index"),
        ({"entry_symbol": "not an identifier"}, "entry_symbol"),
        ({"target": {"arch": "x"}}, "target"),
        ({"params": (ParamSpec("A", "float32"), ParamSpec("A", "float32"))}, "unique names"),
        (
            {
                "params": (
                    ParamSpec("A", "float32", shape=(4,)),
                    ParamSpec("B", "float32", shape=("m",), role="output"),
                ),
                "out_idx": (1,),
            },
            "bound by an input",
        ),
        ({"files": (FileEntry("other.so", "0" * 64),)}, "library"),
    ],
)
def test_invalid_manifest_is_refused(changes: dict[str, object], needle: str) -> None:
    with pytest.raises(ArtifactError, match=needle):
        _manifest(**changes)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"dtype": "float8"}, "dtype"),
        ({"shape": (-1,)}, "shape"),
        ({"shape": ("1n",)}, "symbolic dim name"),
        ({"shape": (True,)}, "shape"),
        ({"kind": "scalar", "shape": (3,)}, "scalar"),
        ({"role": "scratch"}, "role"),
        ({"kind": "scalar", "role": "inout"}, "scalar"),
        ({"alignment": 3}, "alignment"),
        ({"alignment": 0}, "alignment"),
        ({"alignment": True}, "alignment"),
        ({"alignment": "4"}, "alignment"),
        ({"shape": (3,), "strides": (1, 1)}, "strides"),
    ],
)
def test_invalid_param_is_refused(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(ArtifactError, match=needle):
        ParamSpec("A", **{"dtype": "float32", **kwargs})  # type: ignore[arg-type]


@pytest.mark.parametrize("path", ["/abs.so", "../up.so", "", "manifest.json", "./manifest.json"])
def test_file_paths_must_stay_inside(path: str) -> None:
    with pytest.raises(ArtifactError, match="relative path"):
        FileEntry(path, "0" * 64)


@pytest.mark.parametrize("path", ["./lib.so", "lib.so/.", "sub//lib.so"])
def test_a_file_path_has_one_spelling(path: str) -> None:
    # Two spellings of one file passed the unique-paths check, and load() then failed
    # writing its private copy with a FileExistsError naming a temp path.
    with pytest.raises(ArtifactError, match=r"file path: expected a normalized path"):
        FileEntry(path, "0" * 64)


@pytest.mark.parametrize(
    ("path", "needle"),
    [
        (".", "relative path"),
        ("a\x00b.so", "without control characters"),
        ("lib\n.so", "without control characters"),
        ("x" * 300, "255 per component"),
        ("/".join(["d" * 200] * 6), "at most 1024 bytes"),
    ],
)
def test_file_paths_the_file_system_cannot_hold_are_refused_by_field(
    path: str, needle: str
) -> None:
    # These escaped as IndexError, ValueError (embedded null byte) or OSError (name too
    # long) from reading the artifact, naming neither the manifest nor the field.
    with pytest.raises(ArtifactError, match=f"manifest file path: expected .*{needle}"):
        FileEntry(path, "0" * 64)


@pytest.mark.parametrize("text", ["main\n", "A\n"])
def test_identifiers_and_hashes_have_no_trailing_newline(text: str) -> None:
    with pytest.raises(ArtifactError, match="name"):
        ParamSpec(text, "float32", shape=(4,))
    with pytest.raises(ArtifactError, match="sha256"):
        FileEntry("lib.so", "0" * 64 + "\n")


def test_a_number_past_pythons_digit_limit_is_an_artifact_error() -> None:
    with pytest.raises(ArtifactError, match="a number no field can hold"):
        Manifest.loads('{"schema_version": ' + "9" * 5000 + "}")


def test_argument_device_types_round_trip_and_default(tmp_path: Path) -> None:
    tl_runtime.write_artifact(tmp_path, _manifest(argument_device_types=[2, 1]), {"k.so": b"x"})
    data = json.loads((tmp_path / "manifest.json").read_text())
    assert data["argument_device_types"] == [2, 1]
    assert tl_runtime.read_manifest(tmp_path).argument_device_types == (2, 1)
    # A manifest written before the field existed accepts host arrays only (read without
    # the integrity check: editing the file is exactly what that check detects).
    del data["argument_device_types"]
    (tmp_path / "manifest.json").write_text(json.dumps(data))
    assert tl_runtime.read_manifest(tmp_path, verify=False).argument_device_types == (1,)
    assert _manifest().argument_device_types == (1,)


@pytest.mark.parametrize(
    "value", [(), (0,), (5,), (99,), (True,), ("2",), (1, 1), 2, "cpu", None, (2.0,)]
)
def test_invalid_argument_device_types_are_refused(value: object) -> None:
    with pytest.raises(ArtifactError, match="argument_device_types: expected a non-empty list"):
        _manifest(argument_device_types=value)


def test_argument_device_types_not_a_list_in_json(tmp_path: Path) -> None:
    tl_runtime.write_artifact(tmp_path, _manifest(), {"k.so": b"x"})
    data = json.loads((tmp_path / "manifest.json").read_text())
    data["argument_device_types"] = {"cpu": 1}
    (tmp_path / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(ArtifactError, match="argument_device_types"):
        tl_runtime.read_manifest(tmp_path)


def test_schema_version_mismatch(tmp_path: Path) -> None:
    tl_runtime.write_artifact(tmp_path, _manifest(), {"k.so": b"x"})
    data = json.loads((tmp_path / "manifest.json").read_text())
    data["schema_version"] = 99
    (tmp_path / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(SchemaVersionError, match=rf"expected {tl_runtime.SCHEMA_VERSION}.*got 99"):
        tl_runtime.read_manifest(tmp_path)


def test_hash_mismatch_names_the_file(tmp_path: Path) -> None:
    tl_runtime.write_artifact(tmp_path, _manifest(), {"k.so": b"x", "k.cu": b"y"})
    (tmp_path / "k.cu").write_bytes(b"tampered")
    with pytest.raises(HashMismatchError, match=r"'k.cu'"):
        tl_runtime.read_manifest(tmp_path)
    tl_runtime.read_manifest(tmp_path, verify=False)


def test_missing_file_and_missing_manifest(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match=r"manifest.json not found"):
        tl_runtime.read_manifest(tmp_path)
    # A path that does not exist says so (it said "is not a directory", as for a file).
    for call in (tl_runtime.load, tl_runtime.read_manifest):
        with pytest.raises(ArtifactError, match=r"artifact path '.*nowhere' does not exist"):
            call(tmp_path / "nowhere")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ArtifactError, match=r"artifact path '.*file' is not a directory"):
        tl_runtime.load(tmp_path / "file")
    tl_runtime.write_artifact(tmp_path, _manifest(), {"k.so": b"x"})
    (tmp_path / "k.so").unlink()
    with pytest.raises(ArtifactError, match=r"'k.so'.*missing"):
        tl_runtime.read_manifest(tmp_path)


@pytest.mark.parametrize("text", ["{", "[]", '{"schema_version": 1}', '{"schema_version": true}'])
def test_malformed_json_is_an_artifact_error(tmp_path: Path, text: str) -> None:
    (tmp_path / "manifest.json").write_text(text)
    with pytest.raises(ArtifactError):
        tl_runtime.read_manifest(tmp_path)


def test_writer_needs_the_library_file(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="not found"):
        tl_runtime.write_artifact(tmp_path, _manifest(), ["k.so"])


def test_launch_expressions_resolve_from_bindings() -> None:
    launch = LaunchSpec(
        "k_kernel",
        grid=("(n + 127) // 128", "max(m, 1)", 1),
        block=(128, 1, 1),
        dynamic_shared_memory="n * 4 % 7",
    )
    assert launch.resolve({"n": 1000, "m": 0}) == ((8, 1, 1), (128, 1, 1), 4000 % 7)
    for malformed in ("n +", "__import__('os')", "n / 2", "n ** 2", "n\x00"):
        with pytest.raises(ArtifactError, match=r"launch 'k_kernel' grid\[0\]"):
            LaunchSpec("k_kernel", grid=(malformed,))
    for unevaluable in ("k * 2", "n // 0", "n % (n - 4)"):
        with pytest.raises(ArtifactError, match="launch expression"):
            LaunchSpec("k_kernel", grid=(unevaluable,)).resolve({"n": 4})


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.text(max_size=6)
    | st.floats(allow_nan=False),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None, database=None)
@given(data=st.data())
def test_mutated_manifests_raise_only_artifact_errors(data: st.DataObject) -> None:
    """Any JSON replacing any part of a valid manifest is either valid or an ArtifactError."""
    document = _manifest(files=(FileEntry("k.so", "0" * 64),)).to_json()
    path: list[object] = []
    node: object = document
    while isinstance(node, dict | list) and node and data.draw(st.booleans()):
        key = data.draw(
            st.sampled_from(sorted(node) if isinstance(node, dict) else range(len(node)))
        )
        path.append(key)
        node = node[key]  # type: ignore[index]
    replacement = data.draw(_json_values)
    if not path:
        document = replacement
    else:
        parent: object = document
        for key in path[:-1]:
            parent = parent[key]  # type: ignore[index]
        parent[path[-1]] = replacement  # type: ignore[index]
    with contextlib.suppress(ArtifactError):
        Manifest.from_json(document)


class _BytesPath:
    def __fspath__(self) -> bytes:
        return b"/tmp"


@pytest.mark.parametrize(
    ("function", "directory", "shown"),
    [
        ("read_manifest", 5, "int 5"),
        ("read_manifest", None, "NoneType None"),
        ("read_manifest", b"/tmp", "bytes b'/tmp'"),
        ("read_manifest", _BytesPath(), "_BytesPath"),
        ("read_artifact", 5, "int 5"),
        ("verify_files", 5, "int 5"),
    ],
)
def test_a_directory_that_is_not_a_path_is_refused_naming_the_parameter(
    function: str, directory: object, shown: str
) -> None:
    """``read_manifest(5)`` raised pathlib's TypeError, naming neither the function nor
    the parameter."""
    call = getattr(tl_runtime, function)
    args = (directory, _manifest()) if function == "verify_files" else (directory,)
    with pytest.raises(
        TypeError,
        match=rf"^{function}: directory: expected the artifact directory as a str or path-like "
        rf"object.*, got {shown}",
    ):
        call(*args)
