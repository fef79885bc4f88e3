"""The disk cache with the real CPU backend: a hit in a new process (no tvm import),
damage recovery, concurrent compiles from several processes, permission bits, env defaults."""

from __future__ import annotations

import json
import multiprocessing
import os
import stat
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import tl_jit

ROOT = Path(__file__).resolve().parents[1]
# The spawned children of test_concurrent_compiles_leave_one_valid_entry unpickle
# _compile_in_child by importing this module (integration_tests.test_cache): without the
# repository root on sys.path they cannot, and Pool.map waits forever (it did when this
# file ran alone; in the whole suite another module had put the root there).
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

KERNEL_MODULE = textwrap.dedent(
    """
    import tl_jit
    import tl_jit.language as T

    @tl_jit.jit(out_idx=[-1], target="c")
    def add(M, N, block_M=16, block_N=32):
        @T.prim_func
        def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32"),
                 C: T.Tensor((M, N), "float32")):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=32) as (bx, by):
                a = T.alloc_fragment((block_M, block_N), "float32")
                T.copy(A[by * block_M, bx * block_N], a)
                for i, j in T.Parallel(block_M, block_N):
                    a[i, j] = a[i, j] + B[by * block_M + i, bx * block_N + j]
                T.copy(a, C[by * block_M, bx * block_N])
        return main
    """
)

PROBE = textwrap.dedent(
    """
    import json, sys, time
    import numpy as np
    t0 = time.perf_counter()
    import cache_kernel
    t1 = time.perf_counter()
    kernel = cache_kernel.add(40, 70)
    t2 = time.perf_counter()
    a = np.ones((40, 70), np.float32)
    ok = bool((kernel(a, a) == 2).all())
    print(json.dumps({"ok": ok, "tvm": "tvm" in sys.modules, "key": kernel.cache_key,
                      "import_s": t1 - t0, "call_to_callable_s": t2 - t1}))
    """
)


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "cache_kernel.py").write_text(KERNEL_MODULE)
    monkeypatch.setenv("TL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TL_DISABLE_CACHE", raising=False)
    return tmp_path


def _probe(workspace: Path) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(workspace)}
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr
    data: dict[str, object] = json.loads(result.stdout.strip().splitlines()[-1])
    return data


def test_hit_in_a_new_process_skips_the_compiler(workspace: Path) -> None:
    first = _probe(workspace)
    assert first["ok"] and first["tvm"]  # compiled
    # A tl_* source edited meanwhile (other work in a development checkout) changes the
    # keys and makes a probe rebuild; the next probe must then hit.
    for _ in range(3):
        second = _probe(workspace)
        assert second["ok"]
        if not second["tvm"]:
            break
    assert not second["tvm"], "a cache hit imported tvm"


def _compile_in_child(workspace: str) -> str:
    sys.path.insert(0, workspace)
    import cache_kernel

    return str(cache_kernel.add(48, 64).artifact_dir)


def test_concurrent_compiles_leave_one_valid_entry(workspace: Path) -> None:
    context = multiprocessing.get_context("spawn")
    with context.Pool(3) as pool:
        directories = pool.map(_compile_in_child, [str(workspace)] * 3)
    assert len(set(directories)) == 1
    entries = list((workspace / "cache" / "kernels").iterdir())
    assert len(entries) == 1
    import tl_runtime

    tl_runtime.read_manifest(entries[0], verify=True)
    assert stat.S_IMODE((workspace / "cache").stat().st_mode) == 0o700


def test_tampered_entry_is_rebuilt_with_a_warning(workspace: Path) -> None:
    sys.path.insert(0, str(workspace))
    try:
        import cache_kernel
    finally:
        sys.path.remove(str(workspace))
    kernel = cache_kernel.add.compile((24, 24))
    source = kernel.manifest.source_files[0].path
    (kernel.artifact_dir / source).write_text("/* tampered */")
    cache_kernel.add._kernels.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = cache_kernel.add.compile((24, 24))
    assert any(issubclass(w.category, tl_jit.CacheWarning) for w in caught)
    a = np.ones((24, 24), np.float32)
    assert (again(a, a) == 2).all()
    assert "tampered" not in again.get_kernel_source()


def test_disable_cache_and_target_from_env(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sys.path.insert(0, str(ROOT))
    from integration_tests.kernels import load

    module = load("elementwise_add")
    func = module.KERNEL(**module.CASES[0]["args"])
    monkeypatch.setenv("TL_TARGET", "llvm")
    monkeypatch.setenv("TL_DISABLE_CACHE", "1")
    kernel = tl_jit.compile(func, out_idx=module.OUT_IDX)
    assert kernel.manifest.target["kind"] == "llvm"
    assert not (workspace / "cache").exists()
    monkeypatch.setenv("TL_EXECUTION_BACKEND", "cython")
    assert tl_jit.compile(func, out_idx=module.OUT_IDX).runtime_kernel.adapter == "cython"
