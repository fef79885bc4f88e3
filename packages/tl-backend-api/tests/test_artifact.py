"""`build_artifact` / `lower_to_sources` with the CPU backend: manifest, files, errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest

import tl_ir.language as T
import tl_runtime
from tl_backend_api import (
    BackendContext,
    ExecutionBackendSpec,
    build_artifact,
    create_backend_context,
    lower_to_sources,
)


def scale_kernel() -> Any:
    M = T.symbolic("M")

    @T.prim_func
    def scale(A: T.Tensor((M, 16), "float32"), alpha: T.float32, B: T.Tensor((M, 16), "float32")):
        with T.Kernel(T.ceildiv(M, 8), threads=32) as bx:
            tile = T.alloc_fragment((8, 16), "float32")
            T.copy(A[bx * 8, 0], tile)
            for i, j in T.Parallel(8, 16):
                tile[i, j] = tile[i, j] * alpha
            T.copy(tile, B[bx * 8, 0])

    return scale


@pytest.mark.parametrize("kind", ["c", "llvm"])
def test_build_artifact_writes_a_loadable_artifact(kind: str, tmp_path: Path) -> None:
    context = create_backend_context(kind)
    directory = build_artifact(
        context, scale_kernel(), tmp_path / "art", out_idx=-1, extra_versions={"demo": "1"}
    )
    manifest = tl_runtime.read_manifest(directory)
    assert manifest.name == "scale" and manifest.entry_symbol == "scale"
    assert manifest.out_idx == (2,)
    assert [p.name for p in manifest.params] == ["A", "alpha", "B"]
    assert manifest.params[0].shape == ("M", 16)
    assert manifest.params[1].kind == "scalar" and manifest.params[1].dtype == "float32"
    assert manifest.params[2].role == "output"
    assert manifest.target["kind"] == kind
    # The CPU backend's first execution backend (the dev environment has Cython and cc).
    assert manifest.adapter == "cython" and manifest.execution_backend == "cython"
    assert manifest.launches == () and manifest.runnable_with == ()
    assert manifest.versions["demo"] == "1" and "apache-tvm" in manifest.versions
    roles = {f.path: f.role for f in manifest.files}
    assert roles["kernel.so"] == "library"
    assert roles["kernel.c" if kind == "c" else "kernel.ll"] == "source"
    kernel = tl_runtime.load(directory)
    a = np.arange(5 * 16, dtype="float32").reshape(5, 16)
    np.testing.assert_allclose(kernel(a, 2.0), a * 2)


def test_build_artifact_refuses_a_non_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "junk").write_text("x")
    with pytest.raises(FileExistsError, match="empty"):
        build_artifact(create_backend_context("c"), scale_kernel(), tmp_path)


@pytest.mark.parametrize(
    ("out_idx", "error"), [(3, ValueError), ([1], ValueError), ("B", TypeError)]
)
def test_build_artifact_checks_out_idx(out_idx: Any, error: type, tmp_path: Path) -> None:
    with pytest.raises(error, match="out_idx"):
        build_artifact(create_backend_context("c"), scale_kernel(), tmp_path / "a", out_idx=out_idx)


def test_build_artifact_names_a_bad_func(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="PrimFunc"):
        build_artifact(create_backend_context("c"), "not a kernel", tmp_path / "a")  # type: ignore[arg-type]


def test_lower_to_sources_generates_openmp_c_without_a_compiler(tmp_path: Path) -> None:
    sources = lower_to_sources(create_backend_context("c"), scale_kernel(), dump_dir=tmp_path)
    assert sources.language == "c" and sources.entry_symbol == "scale"
    assert "#pragma omp parallel for" in sources.files["kernel.c"]
    assert list(tmp_path.glob("*-cpu-lower-tile-ops.tir"))


def test_a_source_only_execution_backend_gives_a_source_only_artifact(tmp_path: Path) -> None:
    full = create_backend_context("c")
    context = BackendContext(
        backend=full.backend,
        target=full.target,
        target_host=full.target_host,
        execution_backend=ExecutionBackendSpec("sources", adapter="tvm_ffi"),
    )
    directory = build_artifact(context, scale_kernel(), tmp_path / "src", out_idx=[-1])
    manifest = tl_runtime.read_manifest(directory)
    assert [f.path for f in manifest.files] == ["kernel.c"]
    assert manifest.library == "kernel.c"


def test_an_artifact_of_a_spec_without_adapter_records_what_would_run_it(
    tmp_path: Path,
) -> None:
    full = create_backend_context("c")
    source_only = ExecutionBackendSpec("sources", adapter=None)
    backend = attrs.evolve(
        full.backend, execution_backends=(*full.backend.execution_backends, source_only)
    )
    context = BackendContext(
        backend=backend,
        target=full.target,
        target_host=full.target_host,
        execution_backend=source_only,
    )
    directory = build_artifact(context, scale_kernel(), tmp_path / "src", out_idx=[-1])
    manifest = tl_runtime.read_manifest(directory)
    assert manifest.adapter is None and manifest.execution_backend == "sources"
    # The CPU backend's specs that name an adapter, in "auto" order.
    assert manifest.runnable_with == tuple(
        spec.name for spec in full.backend.execution_backends if spec.adapter is not None
    )
    assert manifest.runnable_with and "sources" not in manifest.runnable_with
    with pytest.raises(tl_runtime.SourceOnlyArtifactError, match="holds source only"):
        tl_runtime.load(directory)


def accumulate_kernel() -> Any:
    @T.prim_func
    def accumulate(
        A: T.Tensor((16, 16), "float32"),
        rows: T.Tensor((16,), "float32"),
        acc: T.Tensor((16, 16), "float32"),
        C: T.Tensor((16, 16), "float64", align=64),
    ):
        with T.Kernel(1, threads=16):
            tx = T.get_thread_binding(0)
            tile = T.alloc_fragment((16, 16), "float32")
            T.copy(A[0, 0], tile)
            if tx == 0:  # every thread runs a scalar atomic: one adds the rows
                for i in T.serial(16):
                    T.atomic_add(rows[i], tile[i, 0])  # atomic target: written
            T.copy(tile, acc[0, 0])  # tile-op destination: written
            for i, j in T.Parallel(16, 16):
                C[i, j] = T.Cast("float64", tile[i, j])  # BufferStore: written

    return accumulate


def test_manifest_records_alignment_and_written_params(tmp_path: Path) -> None:
    directory = build_artifact(
        create_backend_context("llvm"), accumulate_kernel(), tmp_path / "art", out_idx=-1
    )
    params = tl_runtime.read_manifest(directory).params
    assert [(p.name, p.role, p.alignment) for p in params] == [
        ("A", "input", 4),
        ("rows", "inout", 4),
        ("acc", "inout", 4),
        ("C", "output", 64),
    ]
    kernel = tl_runtime.load(directory)
    a = np.arange(256, dtype="float32").reshape(16, 16)
    rows = np.ones(16 + 4, "float32")[4:]  # 16 bytes off: element aligned, passed as is
    acc = np.zeros((16, 16), "float32")
    out = kernel(a, rows, acc)
    np.testing.assert_allclose(rows, 1 + a[:, 0])
    np.testing.assert_allclose(acc, a)
    np.testing.assert_allclose(out, a)


def test_gpu_artifacts_record_the_16_byte_vector_alignment(tmp_path: Path) -> None:
    pytest.importorskip("tl_codegen_cuda")
    context = create_backend_context({"kind": "cuda", "arch": "sm_90"}, execution_backend="source")
    directory = build_artifact(context, accumulate_kernel(), tmp_path / "art", out_idx=-1)
    params = tl_runtime.read_manifest(directory).params
    assert [(p.role, p.alignment) for p in params] == [
        ("input", 16),
        ("inout", 16),
        ("inout", 16),
        ("output", 64),
    ]
    assert tl_runtime.read_manifest(directory).argument_device_types == (2,)


def test_alignment_and_device_types_come_from_the_descriptor(tmp_path: Path) -> None:
    import json

    import attrs

    full = create_backend_context("llvm")
    plain = build_artifact(full, accumulate_kernel(), tmp_path / "plain", out_idx=-1)
    raw = json.loads((plain / "manifest.json").read_text())
    assert raw["argument_device_types"] == [1]  # the CPU backend's default: host memory
    declared = attrs.evolve(full.backend, argument_alignment=32, argument_device_types=(1, 3))
    context = BackendContext(
        backend=declared,
        target=full.target,
        target_host=full.target_host,
        execution_backend=full.execution_backend,
    )
    directory = build_artifact(context, accumulate_kernel(), tmp_path / "art", out_idx=-1)
    manifest = tl_runtime.read_manifest(directory)
    assert [p.alignment for p in manifest.params] == [32, 32, 32, 64]
    assert manifest.argument_device_types == (1, 3)
    raw = json.loads((directory / "manifest.json").read_text())
    assert raw["argument_device_types"] == [1, 3]
