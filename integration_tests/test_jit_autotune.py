"""Autotuning with the CPU backend: a known winner among configs compiled in worker
processes, a broken config reported and skipped, the result reused from disk."""

from __future__ import annotations

import sys
import textwrap
import warnings
from pathlib import Path

import pytest

import tl_jit

TUNED_MODULE = textwrap.dedent(
    """
    import tl_jit
    import tl_jit.language as T

    def reference(a):
        return a * 2.0

    # ``repeat`` multiplies the work: the config with repeat=1 must win (256x the work
    # loses clearly; a larger factor only makes each of its ~15 timed calls longer).
    @tl_jit.autotune(
        configs=[{"repeat": 256}, {"repeat": 1}, {"repeat": 1, "block_M": 0}],
        warmup=1, rep=10, ref_prog=reference, max_workers=2,
    )
    @tl_jit.jit(out_idx=[-1], target="c")
    def double(M, N, block_M=32, repeat=1):
        @T.prim_func
        def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
            with T.Kernel(T.ceildiv(M, block_M), threads=32) as bx:
                tile = T.alloc_fragment((block_M, N), "float32")
                out = T.alloc_fragment((block_M, N), "float32")
                T.copy(A[bx * block_M, 0], tile)
                T.fill(out, -3.0e38)
                for r in T.serial(repeat):
                    for i, j in T.Parallel(block_M, N):
                        # Every round reads the last one's result, so none can be dropped.
                        out[i, j] = T.max(out[i, j], tile[i, j] * 2.0)
                T.copy(out, B[bx * block_M, 0])
        return main
    """
)


def test_autotune_picks_the_known_winner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TL_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "tuned_module.py").write_text(TUNED_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import tuned_module

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        best = tuned_module.double(256, 256)
    assert best.config == {"repeat": 1}
    assert best.latency is not None
    skipped = [w for w in caught if issubclass(w.category, tl_jit.AutotuneWarning)]
    assert len(skipped) == 1 and "'block_M': 0" in str(skipped[0].message)
    results = {str(r.config): r for r in tuned_module.double.results}
    assert results[str({"repeat": 256})].latency > best.latency  # type: ignore[operator]

    # A fresh tuner (as in a new process) answers from the saved JSON without re-timing.
    fresh = tl_jit.autotune(
        configs=tuned_module.double.configs,
        ref_prog=tuned_module.reference,
        max_workers=2,
        warmup=1,
        rep=10,
    )(tuned_module.double.jit_function)
    again = fresh(256, 256)
    assert again.config == {"repeat": 1} and again.latency == pytest.approx(best.latency)
    assert len(list((tmp_path / "cache" / "autotune").glob("*.json"))) == 1
    del sys.modules["tuned_module"]


DTYPE_MODULE = textwrap.dedent(
    """
    import tl_jit
    import tl_jit.language as T

    def reference(a, b):
        return a + b

    @tl_jit.jit(out_idx=[-1], target="c")
    def add(N, block=256, dtype="float32"):
        @T.prim_func
        def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
            with T.Kernel(T.ceildiv(N, block), threads=1) as bx:
                for i in T.serial(block):
                    if bx * block + i < N:
                        C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
        return main
    """
)


def test_in_process_timing_gives_each_signature_its_own_inputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Timed in this process (max_workers=1), a configuration that changes the kernel's
    dtype is checked and timed on inputs of its own: it was refused on the first
    configuration's inputs ("expected dtype float32, got float64"), so the order of the
    configurations decided the search."""
    monkeypatch.setenv("TL_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "dtype_module.py").write_text(DTYPE_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import dtype_module

    for configs in ([{"block": 512}, {"dtype": "float64"}], [{"dtype": "float64"}, {"block": 512}]):
        tuned = tl_jit.autotune(
            configs=configs,
            ref_prog=dtype_module.reference,
            warmup=1,
            rep=2,
            cache_results=False,
            max_workers=1,
        )(dtype_module.add)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tuned(2048)
        assert [r.error for r in tuned.results] == [None, None], tuned.results
    del sys.modules["dtype_module"]
