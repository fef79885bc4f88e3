"""Environment defaults through tl_jit with the CPU backend: TL_DUMP_IR, TL_TARGET and
TL_EXECUTION_BACKEND on @jit, and builds skipped on a cache hit."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tl_jit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from integration_tests.kernels import load


def _elementwise() -> tl_jit.JITFunction:
    module = load("elementwise_add")
    return tl_jit.jit(out_idx=module.OUT_IDX)(module.KERNEL)


def test_dump_ir_writes_every_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TL_DUMP_IR", str(tmp_path / "dump"))
    monkeypatch.setenv("TL_DISABLE_CACHE", "1")
    module = load("elementwise_add")
    kernel = tl_jit.compile(
        module.KERNEL(**module.CASES[0]["args"]), out_idx=module.OUT_IDX, target="c"
    )
    assert kernel.cache_key is not None
    folder = tmp_path / "dump" / f"main-{kernel.cache_key[:16]}" / "cpu-c"
    dumps = sorted(p.name for p in folder.glob("*.tir"))
    assert dumps[0] == "00-input.tir" and dumps[-1].endswith("-cpu-exact-float-constants.tir")


def test_dump_ir_keeps_one_folder_per_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: every kernel wrote DIR/cpu-c/NN-*.tir, so only the last one built was left."""
    monkeypatch.setenv("TL_DUMP_IR", str(tmp_path / "dump"))
    monkeypatch.setenv("TL_DISABLE_CACHE", "1")
    module = load("elementwise_add")
    keys = []
    for case in module.CASES[:2]:
        kernel = tl_jit.compile(module.KERNEL(**case["args"]), out_idx=module.OUT_IDX, target="c")
        keys.append(kernel.cache_key)
    folders = sorted(p.name for p in (tmp_path / "dump").iterdir())
    assert len(set(keys)) == 2 and folders == sorted(f"main-{key[:16]}" for key in keys)
    for folder in folders:
        assert (tmp_path / "dump" / folder / "cpu-c" / "00-input.tir").is_file()


def test_a_dump_ir_path_under_a_file_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tl_passes import IRDumpError

    (tmp_path / "a-file").write_text("not a directory")
    monkeypatch.setenv("TL_DUMP_IR", str(tmp_path / "a-file" / "dump"))
    monkeypatch.setenv("TL_DISABLE_CACHE", "1")
    module = load("elementwise_add")
    with pytest.raises(IRDumpError, match=r"TL_DUMP_IR=.*a-file/dump.*cannot create"):
        tl_jit.compile(module.KERNEL(**module.CASES[0]["args"]), out_idx=module.OUT_IDX, target="c")


def test_jit_follows_target_and_execution_backend_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TL_CACHE_DIR", str(tmp_path / "cache"))
    args = load("elementwise_add").CASES[0]["args"]
    monkeypatch.setenv("TL_TARGET", "llvm")
    monkeypatch.setenv("TL_EXECUTION_BACKEND", "cython")
    on_llvm = _elementwise()(**args)
    assert on_llvm.manifest.target["kind"] == "llvm"
    assert on_llvm.runtime_kernel.adapter == "cython"
    monkeypatch.setenv("TL_TARGET", "c")
    monkeypatch.delenv("TL_EXECUTION_BACKEND")
    on_c = _elementwise()(**args)
    assert on_c.manifest.target["kind"] == "c" and on_c.cache_key != on_llvm.cache_key
    a = np.ones((args["M"], args["N"]), np.float32)
    np.testing.assert_allclose(on_c(a, a), on_llvm(a, a))


def test_cache_hit_builds_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tl_jit.compiler

    monkeypatch.setenv("TL_CACHE_DIR", str(tmp_path / "cache"))
    args = load("elementwise_add").CASES[0]["args"]
    first = _elementwise()(**args)
    builds: list[object] = []
    real = tl_jit.compiler.build_into

    def counting_build(*a: object, **k: object) -> object:
        builds.append(a)
        return real(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(tl_jit.compiler, "build_into", counting_build)
    second = _elementwise()(**args)  # a new jit object: front-end memo on disk
    module = load("elementwise_add")
    third = tl_jit.compile(module.KERNEL(**args), out_idx=module.OUT_IDX)  # the ir key
    assert builds == []
    assert first.artifact_dir == second.artifact_dir == third.artifact_dir
