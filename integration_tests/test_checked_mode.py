"""Checked mode (debug=True / TL_DEBUG=1) and TL_INTERPRET=1: an out-of-bounds index is a
Python IndexError naming the buffer, the index, the extent and the kernel's file:line.

Before: an out-of-bounds store killed the process (``free(): invalid size``) and an
out-of-bounds read returned whatever lay there; the interpreter wrapped negative indices.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import tl_jit
from tl_jit import checked

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import checked_kernels  # noqa: E402

KERNELS = str(HERE / "checked_kernels.py")


@pytest.fixture(autouse=True)
def _no_debug_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TL_DEBUG", raising=False)
    monkeypatch.delenv("TL_INTERPRET", raising=False)


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_an_out_of_bounds_store_raises_index_error(target: str) -> None:
    kernel = tl_jit.compile(checked_kernels.writes_past_the_end(16), target=target, debug=True)
    a = np.arange(16, dtype=np.float32)
    b = np.zeros(16, dtype=np.float32)
    with pytest.raises(IndexError) as caught:
        kernel(a, b)
    message = str(caught.value)
    assert "buffer 'B'" in message and "index 16" in message and "extent 16" in message
    assert f"{KERNELS}:20" in message and "4 out-of-bounds accesses" in message
    np.testing.assert_array_equal(b, 2 * a)  # the in-bounds part ran; nothing else written
    assert kernel.debug


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_an_out_of_bounds_read_raises_index_error(target: str) -> None:
    kernel = tl_jit.compile(checked_kernels.reads_before_the_start(4, 8), target=target, debug=True)
    a = np.ones((4, 8), dtype=np.float32)
    with pytest.raises(
        IndexError, match=rf"index -1 .* buffer 'A' \(dim 1, extent 8\) at {KERNELS}:33"
    ):
        kernel(a, np.zeros_like(a))


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_checked_kernels_compute_the_same(target: str) -> None:
    plain = tl_jit.compile(checked_kernels.in_bounds(4, 8), target=target)
    debug = tl_jit.compile(checked_kernels.in_bounds(4, 8), target=target, debug=True)
    assert plain.cache_key != debug.cache_key and not plain.debug and debug.debug
    assert "tl_rt_report_out_of_bounds" not in plain.get_kernel_source()
    a = np.random.default_rng(0).random((4, 8), dtype=np.float32)
    want, got = np.zeros_like(a), np.zeros_like(a)
    plain(a, want)
    debug(a, got)
    np.testing.assert_array_equal(got, want)


def test_tl_debug_turns_it_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TL_DEBUG", "1")
    kernel = tl_jit.compile(checked_kernels.writes_past_the_end(8), target="c")
    with pytest.raises(IndexError, match="buffer 'B'"):
        kernel(np.ones(8, np.float32), np.zeros(8, np.float32))


def test_a_checked_kernel_from_the_cache_is_still_checked(tmp_path: Path) -> None:
    """A new process loads the checked kernel from disk (no build) and still raises."""
    script = textwrap.dedent(
        f"""
        import sys, numpy as np, tl_jit
        sys.path.insert(0, {str(HERE)!r})
        import checked_kernels
        build = tl_jit.jit(checked_kernels.writes_past_the_end, target="llvm", debug=True)
        kernel = build(8)
        try:
            kernel(np.ones(8, np.float32), np.zeros(8, np.float32))
        except IndexError as exc:
            print("RAISED", exc)
        """
    )
    env = {**os.environ, "TL_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("TL_DEBUG", None)
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr
        assert "RAISED" in proc.stdout and f"{KERNELS}:20" in proc.stdout


def test_backends_without_checked_mode_refuse_it() -> None:
    from tl_backend_api import Capabilities

    backend = SimpleNamespace(name="gpu-x")
    context = SimpleNamespace(backend=backend, target_kind="x", capabilities=Capabilities())
    with pytest.raises(NotImplementedError, match="backend 'gpu-x' has no bounds-checked"):
        checked.require_support(context)
    with pytest.raises(TypeError, match="debug: expected True, False or None"):
        checked.resolve_debug("yes")


def test_tl_interpret_runs_the_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TL_INTERPRET", "1")
    kernel = tl_jit.compile(checked_kernels.in_bounds(2, 4), out_idx=[-1])
    assert type(kernel).__name__ == "InterpretedKernel"
    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_array_equal(kernel(a), a[:, ::-1] + 1)
    oob = tl_jit.jit(checked_kernels.reads_before_the_start)(2, 4)
    with pytest.raises(
        IndexError, match=rf"index -1 .* buffer 'A' \(dim 1, extent 4\) at {KERNELS}:33"
    ):
        oob(a, np.zeros_like(a))  # numpy alone would have read A[bx, -1] (the last column)


def test_tl_interpret_runs_eager_kernels_and_names_what_it_lacks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every eager call failed: AttributeError 'InterpretedKernel' has no 'cache_key'.
    import tl_jit.language as T

    @tl_jit.jit
    def double(A):  # type: ignore[no-untyped-def]
        N = T.const("N")
        A: T.Tensor[[N], T.float32]
        C = T.empty((N,), T.float32)
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(N):
                C[i] = A[i] * 2
        return C

    monkeypatch.setenv("TL_INTERPRET", "1")
    a = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(double(a), 2 * a)
    np.testing.assert_array_equal(double(a[:3]), 2 * a[:3])
    kernel = double.compile(N=5)
    assert not hasattr(kernel, "params")
    with pytest.raises(NotImplementedError, match=r"run by the interpreter \(TL_INTERPRET=1\)"):
        kernel.get_profiler()
    monkeypatch.delenv("TL_INTERPRET")
    assert type(double.compile(N=5)).__name__ == "JITKernel"  # nothing interpreted was kept


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_an_atomic_at_a_run_time_offset_builds_checked(target: str) -> None:
    """The atomic's destination is an address (``address_of(Y[...])``): checked mode
    guards its statement, where it had wrapped the load and the build failed (c:
    "address_of() expects a TensorLoad"; llvm: "args.size() == 1 && load"), so no
    flash-attention backward with atomic dQ could run checked."""
    x = np.ones((40, 8), np.float32)
    offsets = np.array([0, 3], np.int32)
    results = []
    for debug in (False, True):
        kernel = tl_jit.compile(
            checked_kernels.atomic_rows_at_an_offset(40, 8, 16), target=target, debug=debug
        )
        y = np.zeros((40, 8), np.float32)
        kernel(x, offsets, y)
        results.append(y)
    expected = np.ones((40, 8), np.float32)
    expected[3:] += 1  # the second grid row adds again from row 3; rows past 40 are dropped
    np.testing.assert_array_equal(results[0], expected)
    np.testing.assert_array_equal(results[1], expected)


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_a_slice_at_a_run_time_offset_is_reported_at_its_line(target: str) -> None:
    """A slice store or read past the end names its own line. Before, both said "an
    access the compiler generated": the front end's wrap of an index that may be
    negative, and the vector load of a slice read, built their nodes without the
    statement's source span."""
    kernel = tl_jit.compile(
        checked_kernels.slices_at_a_run_time_offset(8), target=target, debug=True
    )
    a = np.arange(8, dtype=np.float32)
    with pytest.raises(IndexError, match=rf"index 8 .* buffer 'B' .* at {KERNELS}:70\b"):
        kernel(a, np.zeros(8, np.float32), 6, 0)
    with pytest.raises(IndexError, match=rf"index 8 .* buffer 'S' .* at {KERNELS}:71\b"):
        kernel(a, np.zeros(8, np.float32), 0, 5)
    b = np.zeros(8, np.float32)
    kernel(a, b, 4, 2)
    np.testing.assert_array_equal(b, [2, 3, 4, 5, 0, 1, 2, 3])
