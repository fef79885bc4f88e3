"""The disk cache: atomic entries, locking across processes, damage recovery, permissions, keys."""

from __future__ import annotations

import multiprocessing
import os
import stat
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

from tl_jit import cache as cache_module
from tl_jit.cache import CacheWarning, KernelCache
from tl_jit.errors import CacheError

TESTS_DIR = Path(__file__).resolve().parent


def _write_entry(directory: Path, log: str) -> None:
    """A stand-in build: a tiny valid artifact, slow enough for builders to overlap."""
    import tl_runtime

    with open(log, "a") as fh:
        fh.write(f"{os.getpid()}\n")
    time.sleep(0.3)
    directory.mkdir(parents=True)
    (directory / "lib.so").write_bytes(b"not really a library")
    manifest = tl_runtime.Manifest(
        name="k",
        entry_symbol="k",
        params=(tl_runtime.ParamSpec(name="A", dtype="float32", shape=(4,)),),
        target={"kind": "llvm"},
        library="lib.so",
    )
    tl_runtime.write_artifact(directory, manifest, ["lib.so"])


def _build_in_process(root: str, key: str, log: str) -> str:
    entry = KernelCache(Path(root)).get_or_build(key, lambda d: _write_entry(d, log))
    return str(entry)


def test_concurrent_builders_leave_one_entry(tmp_path: Path) -> None:
    root, log = tmp_path / "cache", tmp_path / "builds.log"
    context = multiprocessing.get_context("spawn")
    with context.Pool(4) as pool:
        paths = pool.starmap(_build_in_process, [(str(root), "9" * 64, str(log))] * 4)
    assert len(set(paths)) == 1
    assert log.read_text().count("\n") == 1, "the entry was built more than once"
    entries = list((root / "kernels").iterdir())
    assert [p.name for p in entries] == ["9" * 64]
    import tl_runtime

    tl_runtime.read_manifest(entries[0], verify=True)
    assert not any((root / "tmp").iterdir())


def test_failed_build_leaves_nothing(tmp_path: Path) -> None:
    store = KernelCache(tmp_path / "cache")

    def broken(directory: Path) -> None:
        directory.mkdir()
        (directory / "half").write_text("x")
        raise RuntimeError("compiler exploded")

    with pytest.raises(RuntimeError, match="exploded"):
        store.get_or_build("a" * 64, broken)
    assert not store.entry_path("a" * 64).exists()
    assert not any((tmp_path / "cache" / "tmp").iterdir())


def test_root_is_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "deep" / "cache"
    monkeypatch.setenv("TL_CACHE_DIR", str(root))
    cache_module.default_cache().get_or_build("b" * 64, lambda d: _write_entry(d, os.devnull))
    for directory in (root, root.parent, root / "kernels"):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory


def test_tampered_entry_is_discarded_with_a_warning(tmp_path: Path) -> None:
    store = KernelCache(tmp_path / "cache")
    entry = store.get_or_build("c" * 64, lambda d: _write_entry(d, os.devnull))
    (entry / "lib.so").write_bytes(b"tampered")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert store.load("c" * 64) is None
    assert [w.category for w in caught] == [CacheWarning]
    assert "sha256" in str(caught[0].message)
    assert not entry.exists()


def test_info_and_clear(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TL_CACHE_DIR", str(tmp_path / "cache"))
    store = cache_module.default_cache()
    store.get_or_build("d" * 64, lambda d: _write_entry(d, os.devnull))
    store.write_record("frontend", "e" * 64, {"ir_key": "d" * 64})
    info = cache_module.info()
    assert (info.kernels, info.frontend_entries, info.autotune_entries) == (1, 1, 0)
    assert info.size_bytes > 0 and str(tmp_path) in info.format()
    # Leftovers no look-up reads are not counted (a FIFO counted as a stored record).
    (store.root / "autotune").mkdir(exist_ok=True)
    os.mkfifo(store.root / "frontend" / f"{'f' * 64}.json")
    os.mkfifo(store.root / "autotune" / f"{'f' * 64}.json")
    (store.root / "kernels" / ("c" * 64)).symlink_to(tmp_path)
    info = cache_module.info()
    assert (info.kernels, info.frontend_entries, info.autotune_entries) == (1, 1, 0)
    (store.root / "kernels" / ("c" * 64)).unlink()
    assert cache_module.clear() == 1
    assert cache_module.info().kernels == 0
    assert store.read_record("frontend", "e" * 64) is None


def _keys_in_subprocess() -> str:
    code = (
        "import tljit_fake_backend as fb\n"
        "from tl_backend_api.registry import isolated_registry, register_backend\n"
        "from tl_jit.compiler import create_context, toolchain_versions\n"
        "from tl_jit.keys import ir_key, frontend_key\n"
        "import tljit_scale_kernel as m\n"
        "with isolated_registry(discover=False):\n"
        "    register_backend(fb.fake_backend())\n"
        "    ctx = create_context('llvm')\n"
        "    print(ir_key(fb.make_scale(64, 2.0), ctx, out_idx=(-1,), pass_configs=None,\n"
        "                 toolchain_versions=toolchain_versions(ctx)))\n"
        "print(frontend_key(m.scale.func, {'n': 64, 'factor': 2.0}, {'target': 'llvm'}))\n"
        "from tl_jit.versions import compiler_versions\n"
        "import json; print(json.dumps(compiler_versions(), sort_keys=True))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(TESTS_DIR)}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_keys_are_stable_across_processes() -> None:
    # Keys fingerprint the tl_* sources; other work in a development checkout may edit
    # one between the two processes. Compare only pairs that saw the same sources.
    for _ in range(4):
        first, second = _keys_in_subprocess(), _keys_in_subprocess()
        *first_keys, first_versions = first.split("\n", 2)
        *second_keys, second_versions = second.split("\n", 2)
        if first_versions == second_versions:
            break
    else:
        pytest.skip("the tl_* sources changed during every attempt")
    assert first_keys == second_keys
    assert all(len(key) == 64 for key in first_keys)


def test_keys_follow_what_they_cover(fake_backend: Any) -> None:
    from tl_jit.compiler import create_context
    from tl_jit.keys import Unkeyable, canonical_value, frontend_key, ir_key

    context = create_context("llvm")

    def key(func: Any, **options: Any) -> str:
        return ir_key(
            func,
            context,
            out_idx=options.get("out_idx"),
            pass_configs=options.get("pass_configs"),
            toolchain_versions={},
        )

    base = key(fake_backend.make_scale(64, 2.0))
    assert key(fake_backend.make_scale(64, 2.0)) == base
    assert key(fake_backend.make_scale(64, 3.0)) != base
    assert key(fake_backend.make_scale(64, 2.0), out_idx=(-1,)) != base
    assert key(fake_backend.make_scale(64, 2.0), pass_configs={"x": 1}) != base

    def builder(n: int) -> int:
        return n

    one = frontend_key(builder, {"n": 1}, {})
    assert frontend_key(builder, {"n": 2}, {}) != one
    assert frontend_key(builder, {"n": 1}, {"target": "c"}) != one
    with pytest.raises(Unkeyable):
        canonical_value(object())
    import numpy as np

    big = np.zeros(10_000)
    changed = big.copy()
    changed[5000] = 1.0  # repr() of both is the same elided text
    assert repr(big) == repr(changed)
    assert canonical_value(big) != canonical_value(changed)
    assert canonical_value(big) == canonical_value(big.copy())


def _one_element_accumulator(scope: str) -> Any:
    import tl_jit.language as T

    alloc = {"local": T.alloc_local, "fragment": T.alloc_fragment, "shared": T.alloc_shared}

    @T.prim_func
    def accumulate(A: T.Tensor((8,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=8):
            total = alloc[scope]((1,), "float32")
            T.fill(total, 0.0)
            for i in T.serial(8):
                total[0] += A[i]
            B[0] = total[0]

    return accumulate


def test_ir_keys_tell_one_element_buffers_of_other_scopes_apart() -> None:
    # The script prints a (1,) buffer as a scalar whatever its scope: the local,
    # fragment and shared versions shared one key and ran one another's code.
    from tl_jit.compiler import create_context
    from tl_jit.keys import ir_key

    context = create_context("c")
    funcs = {scope: _one_element_accumulator(scope) for scope in ("local", "fragment", "shared")}
    assert len({func.script() for func in funcs.values()}) == 1
    keys = {
        scope: ir_key(func, context, out_idx=None, pass_configs=None, toolchain_versions={})
        for scope, func in funcs.items()
    }
    assert len(set(keys.values())) == 3
    again = ir_key(
        _one_element_accumulator("local"),
        context,
        out_idx=None,
        pass_configs=None,
        toolchain_versions={},
    )
    assert again == keys["local"]


def test_a_root_to_be_made_in_a_world_writable_directory_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Passed the root check (absent), was created there, and the first compile failed
    # later with an InsecureArtifactError about an entry directory, not the root.
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("TL_CACHE_DIR", str(shared / "cache"))
    with pytest.raises(CacheError, match=r"cache root .*shared/cache would be created inside"):
        cache_module.default_cache().get_or_build("f" * 64, lambda d: _write_entry(d, os.devnull))
    assert not (shared / "cache").exists()


def test_clear_refuses_a_root_that_is_a_file(tmp_path: Path) -> None:
    # `tl cache clear` said "removed 0 kernel entries from <file>".
    root = tmp_path / "not-a-directory"
    root.write_text("")
    with pytest.raises(CacheError, match="is not a directory"):
        KernelCache(root).clear()


def test_info_names_a_root_that_cannot_be_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It reported "kernels: 0" for a root that is a file or writable by others.
    from tl_jit import cache
    from tl_jit.errors import CacheError

    a_file = tmp_path / "root_file"
    a_file.write_text("x")
    monkeypatch.setenv("TL_CACHE_DIR", str(a_file))
    with pytest.raises(CacheError, match="is not a directory"):
        cache.info()
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("TL_CACHE_DIR", str(shared))
    with pytest.raises(CacheError, match="writable by other users"):
        cache.info()
    monkeypatch.setenv("TL_CACHE_DIR", "~no_such_user_here/x")
    with pytest.raises(ValueError, match=r"TL_CACHE_DIR='~no_such_user_here/x'"):
        cache.info()


def test_an_empty_cache_dir_means_unset_and_a_blank_one_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # docs/cache.md: an empty TL_CACHE_DIR is the per-user directory, as an empty
    # XDG_CACHE_HOME is; "  " made a cache in a directory named by two spaces.
    import platformdirs

    from tl_jit import env

    monkeypatch.setenv("TL_CACHE_DIR", "")
    assert env.cache_root() == Path(platformdirs.user_cache_dir("tl-jit", appauthor=False))
    monkeypatch.setenv("TL_CACHE_DIR", "  ")
    with pytest.raises(ValueError, match=r"TL_CACHE_DIR='  ': expected a directory, got only"):
        env.cache_root()
