"""compile / jit / JITKernel / lower against the fake llvm backend."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tl_jit

TESTS_DIR = Path(__file__).resolve().parent


def _run(code: str, env_extra: dict[str, str], cache_dir: Path) -> str:
    import os

    env = {**os.environ, "TL_CACHE_DIR": str(cache_dir), **env_extra}
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS_DIR), env.get("PYTHONPATH", "")])
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_compile_calls_and_exposes_sources(fake_backend: Any) -> None:
    kernel = tl_jit.compile(fake_backend.vadd, out_idx=[-1], target="llvm")
    a = np.arange(1024, dtype=np.float32)
    np.testing.assert_allclose(kernel(a, a), 2 * a)
    assert [p.name for p in kernel.params] == ["A", "B", "C"]
    assert kernel.out_idx == (2,)
    assert "vadd" in kernel.get_kernel_source()
    # One source (a CPU kernel): it is the host code too (TileLang returns its host source).
    assert kernel.get_host_source() == kernel.get_kernel_source()
    assert kernel.cache_key is not None and kernel.context is not None


def test_compile_rejects_non_prim_func(fake_backend: Any) -> None:
    with pytest.raises(TypeError, match="func: expected a PrimFunc"):
        tl_jit.compile(lambda: None, target="llvm")
    with pytest.raises(TypeError, match="out_idx"):
        tl_jit.compile(fake_backend.vadd, out_idx="C", target="llvm")


def test_bad_pass_configs_name_the_parameter(fake_backend: Any) -> None:
    with pytest.raises(ValueError, match="pass_configs"):
        tl_jit.compile(fake_backend.vadd, target="llvm", pass_configs={"tl.nonsense": 1})


@pytest.mark.parametrize("verbose", ["yes", 2, None])
def test_verbose_must_be_a_bool(fake_backend: Any, verbose: Any) -> None:
    # verbose="yes" was taken by its truth (and verbose="no" printed).
    message = r"^verbose: expected True or False \(or 0/1\), got"
    with pytest.raises(TypeError, match=message):
        tl_jit.compile(fake_backend.vadd, target="llvm", verbose=verbose)
    with pytest.raises(TypeError, match=message):
        tl_jit.jit(verbose=verbose)
    with pytest.raises(TypeError, match=r"^par_compile verbose: expected True or False \(or 0/1\)"):
        tl_jit.par_compile([fake_backend.vadd], target="llvm", verbose=verbose)


def test_second_compile_hits_the_cache(fake_backend: Any, cache_dir: Path) -> None:
    first = tl_jit.compile(fake_backend.vadd, out_idx=[-1], target="llvm")
    second = tl_jit.compile(fake_backend.vadd, out_idx=[-1], target="llvm")
    assert first.cache_key == second.cache_key
    assert first.artifact_dir == second.artifact_dir
    assert len(list((cache_dir / "kernels").iterdir())) == 1
    other = tl_jit.compile(fake_backend.vadd, out_idx=None, target="llvm")
    assert other.cache_key != first.cache_key


def test_export_then_load(fake_backend: Any, tmp_path: Path) -> None:
    kernel = tl_jit.compile(fake_backend.vadd, out_idx=[-1], target="llvm")
    out = kernel.export(tmp_path / "artifact")
    loaded = tl_jit.JITKernel.from_artifact(out)
    a = np.ones(1024, np.float32)
    np.testing.assert_allclose(loaded(a, a), 2 * a)
    with pytest.raises(FileExistsError, match="export path"):
        kernel.export(out)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_an_export_into_a_directory_that_takes_no_entries_names_it(fake_backend: Any) -> None:
    # It failed with "[Errno 2] No such file or directory: '/proc/.x.tmp-<pid>-<hex>'".
    kernel = tl_jit.compile(fake_backend.vadd, out_idx=[-1], target="llvm")
    with pytest.raises(
        OSError,
        match=r"^export path '/proc/tl-x/art': cannot write the artifact there: the directory "
        r"'/proc' takes no new entries",
    ):
        kernel.export("/proc/tl-x/art")


def test_export_gives_the_umask_modes_not_the_caches_private_ones(
    fake_backend: Any, tmp_path: Path
) -> None:
    kernel = tl_jit.compile(fake_backend.vadd, out_idx=[-1], target="llvm")
    previous = os.umask(0o022)
    try:
        out = kernel.export(tmp_path / "shared" / "artifact")
    finally:
        os.umask(previous)
    cache_modes = {p.stat().st_mode & 0o777 for p in Path(kernel.artifact_dir).rglob("*")}
    assert all(mode & 0o077 == 0 for mode in cache_modes)  # the cache stays private
    for path in [out, *out.rglob("*")]:
        expected = 0o755 if path.is_dir() else 0o644
        assert path.stat().st_mode & 0o777 == expected, path
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == sorted(
        p.relative_to(kernel.artifact_dir) for p in Path(kernel.artifact_dir).rglob("*")
    )


def test_jit_compiles_once_per_argument_set(fake_backend: Any) -> None:
    calls: list[int] = []

    @tl_jit.jit(out_idx=-1, target="llvm")
    def scale(n: int, factor: float = 2.0) -> Any:
        calls.append(n)
        return fake_backend.make_scale(n, factor)

    first = scale(64)
    assert scale(64) is first
    assert scale(n=64, factor=2.0) is first
    assert scale(32) is not first
    a = np.ones(64, np.float32)
    np.testing.assert_allclose(first(a), 2 * a)
    assert calls == [64, 32]
    with pytest.raises(TypeError, match="scale"):
        scale(1, 2, 3)


def test_jit_requires_a_prim_func(fake_backend: Any) -> None:
    @tl_jit.jit
    def not_a_kernel(n: int) -> Any:
        return n

    with pytest.raises(TypeError, match="must return a PrimFunc"):
        not_a_kernel(3)


def test_env_defaults(fake_backend: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TL_TARGET", "llvm")
    monkeypatch.setenv("TL_EXECUTION_BACKEND", "cython")
    kernel = tl_jit.compile(fake_backend.vadd, out_idx=[-1])
    assert kernel.manifest.target["kind"] == "llvm"
    assert kernel.manifest.execution_backend == "cython"
    monkeypatch.setenv("TL_EXECUTION_BACKEND", "ctypes")
    with pytest.raises(Exception, match="ctypes"):
        tl_jit.compile(fake_backend.vadd, out_idx=[-1])


@pytest.mark.parametrize("variable", ["TL_DISABLE_CACHE", "TILELANG_DISABLE_CACHE"])
def test_disable_cache_writes_nothing(
    fake_backend: Any, cache_dir: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    # TileLang's name too: its autotune examples set it and expect a tuning each run.
    monkeypatch.delenv("TL_DISABLE_CACHE", raising=False)
    monkeypatch.setenv(variable, "1")
    kernel = tl_jit.compile(fake_backend.vadd, out_idx=[-1], target="llvm")
    a = np.ones(1024, np.float32)
    np.testing.assert_allclose(kernel(a, a), 2 * a)
    assert not cache_dir.exists()


def test_lower_returns_sources(fake_backend: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import tl_backend_api

    monkeypatch.setattr(
        tl_backend_api, "lower_to_sources", fake_backend.lower_to_sources, raising=False
    )
    sources = tl_jit.lower(fake_backend.vadd, target="llvm")
    assert "vadd" in next(iter(sources.files.values()))


def test_import_is_lazy_about_tvm() -> None:
    code = (
        "import sys, tl_jit, tl_jit.language as T\n"
        "tl_jit.jit, tl_jit.cache, tl_jit.profiler\n"
        "assert 'tvm' not in sys.modules, 'tvm imported'\n"
        "import tl_ir.language\n"
        "assert T.prim_func is tl_ir.language.prim_func\n"
        "assert 'Kernel' in T.__all__\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_frontend_hit_in_new_process_skips_tvm(fake_backend: Any, cache_dir: Path) -> None:
    compile_code = (
        "import tljit_fake_backend as fb; fb.install()\n"
        "import tljit_scale_kernel as m\n"
        "k = m.scale(128, 2.0)\n"
        "print(k.cache_key)\n"
    )
    key = _run(compile_code, {}, cache_dir).strip()
    hit_code = (
        "import sys, numpy as np\n"
        "import tljit_scale_kernel as m\n"
        "k = m.scale(128, 2.0)\n"
        "assert 'tvm' not in sys.modules, 'tvm was imported on a cache hit'\n"
        "a = np.ones(128, np.float32)\n"
        "assert (k(a) == 2).all()\n"
        "print(k.cache_key)\n"
    )
    hit_code_or_retry = hit_code.replace(
        "assert 'tvm' not in sys.modules, 'tvm was imported on a cache hit'\n",
        "print('tvm' in sys.modules)\n",
    )
    # A tl_* source edited meanwhile (other work in a development checkout) changes the
    # keys and makes one run rebuild; the next one must hit.
    for _ in range(3):
        tvm_imported, hit_key = _run(hit_code_or_retry, {}, cache_dir).split()
        if tvm_imported == "False":
            break
    assert tvm_imported == "False", "tvm was imported on a cache hit"
    assert hit_key == key or len(list((cache_dir / "frontend").glob("*.json"))) > 1


def test_damaged_memo_target_is_rebuilt(fake_backend: Any, cache_dir: Path) -> None:
    import tljit_scale_kernel as module

    kernel = module.scale.compile((64, 3.0))
    library = kernel.artifact_dir / kernel.manifest.library
    # A new file, not an in-place truncation: this process has the library mapped.
    data = library.read_bytes()
    library.unlink()
    library.write_bytes(data[:100])
    module.scale._kernels.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = module.scale.compile((64, 3.0))
    assert any("damaged" in str(w.message) for w in caught)
    a = np.ones(64, np.float32)
    np.testing.assert_allclose(again(a), 3 * a)


def test_a_call_runs_the_class_call_path_without_a_per_instance_class(fake_backend: Any) -> None:
    kernel = tl_jit.compile(fake_backend.vadd, out_idx=[-1], target="llvm")
    assert type(kernel) is tl_jit.JITKernel
    a = np.arange(1024, dtype=np.float32)
    np.testing.assert_allclose(kernel(a, a), 2 * a)
    # No wrapper in between: a call is functools.partial's C call into the runtime
    # kernel's own call path.
    assert kernel.func == kernel.runtime_kernel.__call__


def test_an_entry_damaged_before_the_lock_is_rebuilt_under_it_with_one_build(
    fake_backend: Any, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process leaves a damaged entry between this one's look-up and its lock:
    the entry is checked under the lock like `load` checks it, rebuilt once, loaded once."""
    import shutil

    from tl_jit import cache as cache_module

    good = tl_jit.compile(fake_backend.vadd, out_idx=[-1], target="llvm")
    assert good.cache_key is not None
    key = good.cache_key
    store = cache_module.default_cache()
    saved = cache_dir / "saved-entry"
    shutil.copytree(store.entry_path(key), saved)
    shutil.rmtree(store.entry_path(key))

    original_load = cache_module.KernelCache.load
    calls = {"load": 0, "get_or_build": 0, "build": 0}

    def load_then_damage(self: Any, k: str, adapter: str | None = None) -> Any:
        calls["load"] += 1
        found = original_load(self, k, adapter)
        if calls["load"] == 1:  # the race: a damaged entry appears after the look-up
            shutil.copytree(saved, self.entry_path(k))
            library = next(p for p in self.entry_path(k).iterdir() if p.suffix == ".so")
            library.write_bytes(library.read_bytes() + b"\0")
        return found

    original_get_or_build = cache_module.KernelCache.get_or_build

    def counting_get_or_build(self: Any, k: str, build: Any, **kwargs: Any) -> Any:
        calls["get_or_build"] += 1

        def counted(directory: Path) -> object:
            calls["build"] += 1
            return build(directory)

        return original_get_or_build(self, k, counted, **kwargs)

    monkeypatch.setattr(cache_module.KernelCache, "load", load_then_damage)
    monkeypatch.setattr(cache_module.KernelCache, "get_or_build", counting_get_or_build)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "damaged, will be rebuilt" warning on this path
        kernel = tl_jit.compile(fake_backend.vadd, out_idx=[-1], target="llvm")
    assert calls == {"load": 1, "get_or_build": 1, "build": 1}
    a = np.arange(1024, dtype=np.float32)
    np.testing.assert_allclose(kernel(a, a), 2 * a)
