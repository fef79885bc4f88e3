"""Fault injection on artifacts: manifest edits, symlinks, deep nesting, replaced artifacts.

Everything here must be refused with an ArtifactError naming the file (never loaded,
never a RecursionError), or, for an artifact replaced at the same path, run the new code.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import tvm
from tvm.script import tirx as T

import tl_runtime
from tl_runtime import ArtifactError, HashMismatchError

Artifact = Callable[..., Path]
SRC = str(Path(tl_runtime.__file__).resolve().parent.parent)


def _edit_manifest(directory: Path, edit: Callable[[dict[str, object]], None]) -> None:
    path = directory / "manifest.json"
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data, indent=2))


def test_well_formed_manifest_edit_is_detected(artifact_copy: Artifact, adapter: str) -> None:
    directory = artifact_copy("vadd", out_idx=(2,))

    def shrink_output(data: dict[str, object]) -> None:
        params = data["params"]
        assert isinstance(params, list)
        params[2]["shape"] = [16]

    _edit_manifest(directory, shrink_output)
    with pytest.raises(HashMismatchError, match=r"manifest.json.*modified after export"):
        tl_runtime.load(directory, adapter=adapter)


def test_manifest_without_its_digest_is_refused(artifact_copy: Artifact) -> None:
    directory = artifact_copy("vadd", out_idx=(2,))

    def drop_digest(data: dict[str, object]) -> None:
        del data["manifest_sha256"]

    _edit_manifest(directory, drop_digest)
    with pytest.raises(ArtifactError, match="has no manifest_sha256"):
        tl_runtime.load(directory)
    # Reading without verification (inspection) still works.
    assert tl_runtime.read_manifest(directory, verify=False).name == "vadd"


def test_deeply_nested_manifest_is_an_artifact_error(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text('{"a": ' * 100_000 + "1" + "}" * 100_000)
    for call in (tl_runtime.load, tl_runtime.read_manifest):
        with pytest.raises(ArtifactError, match="nested too deeply"):
            call(tmp_path)


def test_symlinked_library_is_refused(artifact_copy: Artifact, tmp_path: Path) -> None:
    directory = artifact_copy("vadd", out_idx=(2,))
    library = directory / "vadd.so"
    outside = tmp_path / "outside.so"
    shutil.move(library, outside)  # same content: only the link is wrong
    library.symlink_to(outside)
    with pytest.raises(ArtifactError, match=r"'vadd.so'.*is a symlink"):
        tl_runtime.load(directory)


def test_symlinked_manifest_is_refused(artifact_copy: Artifact, tmp_path: Path) -> None:
    directory = artifact_copy("vadd", out_idx=(2,))
    outside = tmp_path / "manifest-elsewhere.json"
    shutil.move(directory / "manifest.json", outside)
    (directory / "manifest.json").symlink_to(outside)
    with pytest.raises(ArtifactError, match="is a symlink"):
        tl_runtime.load(directory)


def test_symlinked_subdirectory_is_refused(artifact: Artifact, tmp_path: Path) -> None:
    """A library inside a subdirectory that is a link to somewhere else."""
    source = artifact("vadd", out_idx=(2,))
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copyfile(source / "vadd.so", outside / "vadd.so")
    directory = tmp_path / "artifact"
    (directory / "lib").mkdir(parents=True)
    shutil.copyfile(source / "vadd.so", directory / "lib" / "vadd.so")
    manifest = tl_runtime.read_manifest(source)
    fields = {name: getattr(manifest, name) for name in manifest.__dataclass_fields__}
    fields.update(library="lib/vadd.so", files=())
    tl_runtime.write_artifact(directory, tl_runtime.Manifest(**fields), ["lib/vadd.so"])
    assert tl_runtime.load(directory)(np.ones(1024, np.float32), np.ones(1024, np.float32))[0] == 2
    shutil.rmtree(directory / "lib")
    (directory / "lib").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ArtifactError, match=r"'lib/vadd.so'.*lib is a symlink"):
        tl_runtime.read_manifest(directory)


@T.prim_func
def _subtract(
    A: T.Buffer((1024,), "float32"),
    B: T.Buffer((1024,), "float32"),
    C: T.Buffer((1024,), "float32"),
):
    T.func_attr({"tir.noalias": True})
    for i in range(1024):
        C[i] = A[i] - B[i]


def _vsub_named_vadd(directory: Path, like: Path) -> Path:
    """An artifact whose manifest matches ``like``'s (entry ``vadd``) but computes A - B."""
    directory.mkdir(parents=True)
    lib = tvm.compile(_subtract.with_attr("global_symbol", "vadd"), target="llvm")
    lib.export_library(str(directory / "vadd.so"))
    manifest = tl_runtime.read_manifest(like)
    fields = {name: getattr(manifest, name) for name in manifest.__dataclass_fields__}
    fields["files"] = ()
    return tl_runtime.write_artifact(directory, tl_runtime.Manifest(**fields), ["vadd.so"])


@pytest.mark.parametrize("adapter_key", ["tvm_ffi", "cython"])
def test_replaced_artifact_at_the_same_path_runs_the_new_code(
    artifact: Artifact, tmp_path: Path, adapter_key: str
) -> None:
    """dlopen caches by path: the second load must not run the first library."""
    vadd = artifact("vadd", out_idx=(2,))
    vsub = _vsub_named_vadd(tmp_path / "vsub", vadd)
    script = textwrap.dedent(
        f"""
        import shutil, numpy as np, tl_runtime
        a = np.full(1024, 5, np.float32); b = np.full(1024, 2, np.float32)
        d = {str(tmp_path / "d")!r}
        shutil.copytree({str(vadd)!r}, d)
        first = tl_runtime.load(d, adapter={adapter_key!r})  # kept: its library stays mapped
        print("first", first(a, b)[0])
        shutil.rmtree(d)
        shutil.copytree({str(vsub)!r}, d)
        second = tl_runtime.load(d, adapter={adapter_key!r})
        print("second", second(a, b)[0])
        shutil.rmtree(d)
        shutil.copytree({str(vadd)!r}, d)
        third = tl_runtime.load(d, adapter={adapter_key!r})
        print("third", third(a, b)[0], first(a, b)[0], second(a, b)[0])
        """
    )
    env = {**os.environ, "PYTHONPATH": SRC}
    proc = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split("\n")[:3] == ["first 7.0", "second 3.0", "third 7.0 7.0 3.0"], (
        proc.stdout
    )


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("shape", [2**62, 2**62], r"shape: expected static dims totalling at most 2\*\*63 - 1"),
        ("shape", [2**64], r"shape\[0\]: expected an int in \[0, 2\*\*63 - 1\]"),
        (
            "shape",
            [2**61],
            "shape: expected static dims totalling at most",
        ),  # 2**61 float32 elements: 2**63 bytes
        ("alignment", 2**40, r"alignment: expected a power of two in \[1, 65536\]"),
    ],
)
def test_huge_dims_or_alignment_are_refused_at_load(
    artifact_copy: Artifact, field: str, value: object, message: str
) -> None:
    """Values no array can have fail once, at load, naming the parameter (not at each call)."""
    directory = artifact_copy("vadd", out_idx=(2,))

    def enlarge(data: dict[str, object]) -> None:
        params = data["params"]
        assert isinstance(params, list)
        params[2][field] = value

    _edit_manifest(directory, enlarge)
    with pytest.raises(ArtifactError, match=r"param 'C' " + message):
        tl_runtime.load(directory)
