"""The manifest's ``launches``: every device kernel's symbol, arguments, grid, block and
shared memory, validated against the parameters, round-tripped, hash-covered; and the
source-only artifact (no adapter) that ``load`` refuses with what would run it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import tl_runtime
from tl_runtime import (
    ArtifactError,
    HashMismatchError,
    LaunchArgument,
    LaunchSpec,
    Manifest,
    ParamSpec,
    SourceOnlyArtifactError,
    evaluate_dim_expression,
)
from tl_runtime.manifest import dim_expression_names

PARAMS = (
    ParamSpec("A", "float32", shape=("M", 4)),
    ParamSpec("alpha", "float32", kind="scalar"),
    ParamSpec("B", "float32", shape=("M", 4), role="output"),
)
WORKSPACE = LaunchArgument("workspace", "W", "float32", "M * 16")
FIRST = LaunchSpec(
    "scale_kernel",
    grid=("((M + 31) // 32)",),
    block=(128,),
    arguments=(
        LaunchArgument("buffer", "A", "float32"),
        WORKSPACE,
        LaunchArgument("dim", "M", "int32"),
        LaunchArgument("scalar", "alpha", "float32"),
    ),
)
SECOND = LaunchSpec(
    "scale_kernel_1",
    grid=("M", 2),
    block=(64,),
    dynamic_shared_memory="max(M * 4, 256)",
    arguments=(WORKSPACE, LaunchArgument("buffer", "B", "float32")),
)


def two_launches(**changes: Any) -> Manifest:
    fields: dict[str, Any] = {
        "name": "scale",
        "entry_symbol": "scale_kernel",
        "params": PARAMS,
        "target": {"kind": "gpu"},
        "library": "scale.bin",
        "out_idx": (2,),
        "adapter": "device_launcher",
        "argument_device_types": (2,),
        "launches": (FIRST, SECOND),
    }
    fields.update(changes)
    return Manifest(**fields)


def test_every_launch_round_trips_in_order(tmp_path: Path) -> None:
    directory = tl_runtime.write_artifact(tmp_path / "art", two_launches(), {"scale.bin": b"x"})
    manifest = tl_runtime.read_manifest(directory)
    assert manifest.launches == (FIRST, SECOND)
    raw = json.loads((directory / "manifest.json").read_text())
    assert [launch["symbol"] for launch in raw["launches"]] == ["scale_kernel", "scale_kernel_1"]
    assert raw["launches"][0]["arguments"][1] == {
        "kind": "workspace",
        "name": "W",
        "dtype": "float32",
        "nbytes": "M * 16",
    }
    assert "nbytes" not in raw["launches"][0]["arguments"][0]
    assert manifest.launches[1].resolve({"M": 40}) == ((40, 2), (64,), 256)
    assert manifest.launches[1].resolve({"M": 100}) == ((100, 2), (64,), 400)


def test_a_host_kernel_has_no_launches() -> None:
    manifest = two_launches(launches=())
    assert manifest.launches == ()
    assert manifest.to_json()["launches"] == []


def _with_first(**changes: Any) -> Manifest:
    fields = {
        "grid": FIRST.grid,
        "block": FIRST.block,
        "dynamic_shared_memory": FIRST.dynamic_shared_memory,
        "arguments": FIRST.arguments,
        **changes,
    }
    return two_launches(launches=(LaunchSpec("scale_kernel", **fields), SECOND))


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"grid": ("N * 2",)}, r"launch 'scale_kernel'.*symbolic dims \['M'\].*\['N'\]"),
        ({"dynamic_shared_memory": "K"}, r"launch 'scale_kernel'.*\['K'\]"),
        (
            {"arguments": (LaunchArgument("buffer", "C", "float32"),)},
            r"argument 'C'.*tensor parameter \['A', 'B'\]",
        ),
        (
            {"arguments": (LaunchArgument("buffer", "A", "float16"),)},
            r"argument 'A' dtype.*'float32'.*'float16'",
        ),
        (
            {"arguments": (LaunchArgument("scalar", "A", "float32"),)},
            r"argument 'A'.*scalar parameter \['alpha'\]",
        ),
        ({"arguments": (LaunchArgument("dim", "K", "int32"),)}, r"\['K'\]"),
        (
            {"arguments": (LaunchArgument("workspace", "W", "float32", "M * 8"),)},
            r"argument 'W'.*same dtype and nbytes in every launch",
        ),
        (
            {"arguments": (LaunchArgument("workspace", "A", "float32", 16),)},
            r"argument 'A'.*not a parameter's",
        ),
    ],
)
def test_launches_must_fit_the_parameters(changes: dict[str, Any], needle: str) -> None:
    with pytest.raises(ArtifactError, match=needle):
        _with_first(**changes)


def test_each_device_kernel_appears_once() -> None:
    with pytest.raises(ArtifactError, match=r"launches: expected one entry per device kernel"):
        two_launches(launches=(FIRST, FIRST))
    with pytest.raises(ArtifactError, match="launches: expected LaunchSpec items"):
        two_launches(launches=({"symbol": "scale_kernel"},))


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"kind": "pointer"}, r"kind: expected one of \('buffer', 'scalar', 'dim', 'workspace'\)"),
        ({"name": "1x"}, "launch argument name: expected an identifier"),
        ({"dtype": ""}, "dtype: expected a dtype name"),
        ({"kind": "scalar", "dtype": "complex64"}, "dtype: expected one of"),
        ({"kind": "dim", "dtype": "float32"}, r"dtype: expected one of \['int16'"),
        ({"kind": "workspace"}, "nbytes: expected the workspace's size in bytes, got None"),
        ({"kind": "workspace", "nbytes": -1}, r"nbytes: expected an int in \[0, 2\*\*63 - 1\]"),
        ({"kind": "workspace", "nbytes": "n ** 2"}, "nbytes: expected a well-formed"),
        ({"nbytes": 16}, "nbytes: expected no nbytes"),
    ],
)
def test_a_malformed_argument_names_its_field(kwargs: dict[str, Any], needle: str) -> None:
    fields: dict[str, Any] = {"kind": "buffer", "name": "A", "dtype": "float32", **kwargs}
    with pytest.raises(ArtifactError, match=needle):
        LaunchArgument(**fields)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"symbol": "not a symbol"}, "launch symbol: expected a C identifier"),
        ({"grid": ()}, r"grid: expected 1 to 3 extents"),
        ({"block": (1, 1, 1, 1)}, r"block: expected 1 to 3 extents"),
        ({"grid": "M"}, "grid: expected a list of extents"),
        ({"grid": (True,)}, r"grid\[0\]: expected an int >= 0 or an expression"),
        ({"block": (-1,)}, r"block\[0\]: expected an int in \[0"),
        ({"dynamic_shared_memory": 1.5}, "dynamic_shared_memory: expected an int >= 0"),
        ({"arguments": ({"kind": "buffer"},)}, "arguments: expected LaunchArgument items"),
    ],
)
def test_a_malformed_launch_names_its_field(kwargs: dict[str, Any], needle: str) -> None:
    fields: dict[str, Any] = {"symbol": "k", **kwargs}
    with pytest.raises(ArtifactError, match=needle):
        LaunchSpec(**fields)


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("launches", {"symbol": "k"}, "launches: expected a list"),
        ("launches", [{"symbol": "k", "grid": [1], "block": [1]}], r"arguments: expected a list"),
        (
            "launches",
            [{"symbol": "k", "grid": [1], "block": [1], "arguments": []}],
            "dynamic_shared_memory",
        ),
    ],
)
def test_malformed_launches_in_json_are_artifact_errors(
    tmp_path: Path, field: str, value: object, needle: str
) -> None:
    document = two_launches().to_json()
    document["files"] = [{"path": "scale.bin", "sha256": "0" * 64, "role": "library"}]
    document[field] = value
    with pytest.raises(ArtifactError, match=needle):
        Manifest.from_json(document)


def test_an_edited_launch_is_detected(tmp_path: Path) -> None:
    """``launches`` is covered by ``manifest_sha256`` like every other field."""
    directory = tl_runtime.write_artifact(tmp_path / "art", two_launches(), {"scale.bin": b"x"})
    path = directory / "manifest.json"
    for edit in (
        lambda d: d["launches"][1]["grid"].__setitem__(0, 1),
        lambda d: d["launches"][0]["arguments"].reverse(),
        lambda d: [d["launches"][i]["arguments"][1 - i].update(nbytes="M * 4") for i in (0, 1)],
        lambda d: d["launches"].pop(),
    ):
        original = path.read_text()
        document = json.loads(original)
        edit(document)
        path.write_text(json.dumps(document))
        with pytest.raises(HashMismatchError, match="modified after export"):
            tl_runtime.read_manifest(directory)
        path.write_text(original)
    tl_runtime.read_manifest(directory)


def test_the_expression_evaluator_is_public() -> None:
    assert tl_runtime.evaluate_dim_expression is evaluate_dim_expression
    assert evaluate_dim_expression(7, {}) == 7
    assert evaluate_dim_expression("((n + 127) // 128)", {"n": 129}) == 2
    assert evaluate_dim_expression("min(n, 4) - -m % 3", {"n": 9, "m": 2}) == 3
    assert dim_expression_names("max(n, m * 2) // k") == {"n", "m", "k"}
    assert dim_expression_names(3) == frozenset()
    with pytest.raises(ArtifactError, match=r"names bound at call time \['n'\]"):
        evaluate_dim_expression("n + m", {"n": 1})
    with pytest.raises(ArtifactError, match="a non-zero divisor"):
        evaluate_dim_expression("n // (n - 1)", {"n": 1})
    with pytest.raises(ArtifactError, match="an int or an expression string"):
        evaluate_dim_expression(1.5, {})  # type: ignore[arg-type]


DEEP_EXPRESSIONS = [
    pytest.param("-" * 1000 + "1", "nested deeper than 64 levels", id="unary-1000"),
    pytest.param("*".join(["2"] * 2000), "nested deeper than 64 levels", id="mul-chain-2000"),
    pytest.param("(" * 200 + "n" + ")" * 200, "nested deeper than 64 levels", id="parens-200"),
    pytest.param("min(" * 100 + "n" + ")" * 100, "nested deeper than 64 levels", id="calls-100"),
    pytest.param("-" * 100000 + "1", r"\(100001 characters\)", id="unary-100000"),
    pytest.param("1 + " * 1100 + "1", r"\(4401 characters\)", id="long"),
]


@pytest.mark.parametrize(("expression", "needle"), DEEP_EXPRESSIONS)
def test_an_expression_too_deep_or_too_long_is_refused_by_validation(
    tmp_path: Path, expression: str, needle: str
) -> None:
    """These passed validation, then evaluating them raised RecursionError; the 100000-deep
    one made read_manifest (and load) raise a bare MemoryError."""
    with pytest.raises(ArtifactError, match=rf"manifest launch 'k' grid\[0\]: .*{needle}"):
        LaunchSpec("k", grid=(expression,))
    with pytest.raises(ArtifactError, match=needle):
        evaluate_dim_expression(expression, {"n": 1})
    # the same through read_manifest and load, from a manifest on disk (digest fixed up)
    directory = tl_runtime.write_artifact(tmp_path / "art", two_launches(), {"scale.bin": b"x"})
    path = directory / "manifest.json"
    document = json.loads(path.read_text())
    document["launches"][1]["grid"][0] = expression
    from tl_runtime.manifest.storage import manifest_digest

    document["manifest_sha256"] = manifest_digest(document)
    path.write_text(json.dumps(document))
    field = r"manifest launch 'scale_kernel_1' grid\[0\]: "
    with pytest.raises(ArtifactError, match=field + ".*" + needle) as caught:
        tl_runtime.read_manifest(directory)
    assert len(str(caught.value)) < 600  # the expression is cut in the message
    with pytest.raises(ArtifactError, match=field):
        tl_runtime.load(directory)


def test_expressions_at_the_bounds_evaluate() -> None:
    assert evaluate_dim_expression("-" * 63 + "n", {"n": 5}) == -5
    assert evaluate_dim_expression("(" * 63 + "n" + ")" * 63, {"n": 5}) == 5
    assert evaluate_dim_expression("*".join(["2"] * 64), {}) == 2**64  # 63 products deep
    with pytest.raises(ArtifactError, match="nested deeper than 64 levels"):
        evaluate_dim_expression("*".join(["2"] * 65), {})
    longest = " " * 4093 + "1+1"  # 4096 characters
    assert evaluate_dim_expression(longest, {}) == 2
    with pytest.raises(ArtifactError, match=r"\(4097 characters\)"):
        evaluate_dim_expression(longest + " ", {})
    LaunchSpec("k", grid=("min(" * 32 + "n" + ", 1)" * 32,))


def test_the_grammar_is_what_it_was() -> None:
    """The parser that replaced ``ast`` reads the same language, with Python's meaning."""
    for text, value in [
        ("-7 // 2", -4),
        ("-7 % 3", 2),
        ("2 * -3 + 10 // 3 % 2", -5),
        ("10 - 4 - 3", 3),
        ("max(1, 2, 3) - min(4, n)", 1),
        ("- -n", 2),
        ("( n )*3", 6),
        ("min", 9),  # a dim may be named min
    ]:
        assert evaluate_dim_expression(text, {"n": 2, "min": 9}) == value, text
    for bad in ("n ** 2", "+n", "n / 2", "f(n)", "min()", "1.5", "0x10", "n n", "", "(n", "n)"):
        with pytest.raises(ArtifactError, match="launch expression: expected a well-formed"):
            evaluate_dim_expression(bad, {"n": 2})
    assert dim_expression_names("max(n, m * 2) // k + min") == {"n", "m", "k", "min"}


@pytest.mark.parametrize("value", [1.5, "3", None, True, 2.0])
def test_a_binding_that_is_not_an_int_is_refused_naming_the_symbol(value: object) -> None:
    """``evaluate_dim_expression("n", {"n": 1.5})`` returned 1."""
    with pytest.raises(TypeError, match=r"bindings\['n'\]: expected an int .*got "):
        evaluate_dim_expression("n + 0", {"n": value})  # type: ignore[dict-item]


def test_a_numpy_integer_binding_is_an_int() -> None:
    import numpy as np

    assert evaluate_dim_expression("n * 2", {"n": np.int64(3)}) == 6  # type: ignore[dict-item]


def source_only(directory: Path, runnable_with: tuple[str, ...]) -> Path:
    draft = two_launches(
        library="scale.src",
        adapter=None,
        execution_backend="source",
        runnable_with=runnable_with,
    )
    return tl_runtime.write_artifact(directory, draft, {"scale.src": b"source text"})


def test_a_source_only_artifact_names_what_would_run_it(tmp_path: Path) -> None:
    directory = source_only(tmp_path / "art", ("compiled", "jit"))
    manifest = tl_runtime.read_manifest(directory)
    assert manifest.adapter is None
    assert manifest.runnable_with == ("compiled", "jit")
    raw = json.loads((directory / "manifest.json").read_text())
    assert raw["execution"] == {
        "backend": "source",
        "adapter": None,
        "runnable_with": ["compiled", "jit"],
    }
    with pytest.raises(SourceOnlyArtifactError) as info:
        tl_runtime.load(directory)
    message = str(info.value)
    assert "holds source only" in message
    assert "execution_backend='compiled' or 'jit'" in message
    assert "adapter=" in message and "'scale.src'" in message
    assert isinstance(info.value, ArtifactError)


def test_a_source_only_artifact_without_a_runner_says_so(tmp_path: Path) -> None:
    with pytest.raises(SourceOnlyArtifactError, match="no execution backend of the backend"):
        tl_runtime.load(source_only(tmp_path / "art", ()))


def test_a_source_only_artifact_loads_with_an_adapter_the_caller_names(tmp_path: Path) -> None:
    """Naming an adapter skips the refusal: the adapter decides (tvm_ffi cannot load it)."""
    directory = source_only(tmp_path / "art", ())
    with pytest.raises(ArtifactError, match=r"scale\.src") as info:
        tl_runtime.load(directory, adapter="tvm_ffi")
    assert not isinstance(info.value, SourceOnlyArtifactError)


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"adapter": ""}, "adapter: expected a non-empty string or None"),
        ({"runnable_with": "cubin"}, "runnable_with: expected a list"),
        ({"runnable_with": ("a", "a")}, "runnable_with: expected a list of distinct"),
        ({"runnable_with": (1,)}, "runnable_with: expected a list"),
    ],
)
def test_execution_fields_are_validated(changes: dict[str, Any], needle: str) -> None:
    with pytest.raises(ArtifactError, match=needle):
        two_launches(**changes)
