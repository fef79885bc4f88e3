"""``T.assume`` on what the caller passes is checked at each call (`tl_ir.host_assumes`).

TileLang's ``test_host_evaluable_assume_is_checked_at_runtime``: before, a call breaking
``T.assume(N % 4 == 0)`` ran, and on ``llvm`` (which vectorizes the guarded store on
the promise) wrote two elements past the end of a two-element argument.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tl_jit
import tl_jit.language as T


def _assuming() -> Any:
    N = T.dynamic("N")

    @T.prim_func
    def assuming(A: T.Tensor((N,), "float32"), scale: T.float32):
        with T.Kernel(1, threads=32):
            T.assume(N % 4 == 0)
            tx = T.get_thread_binding()
            T.assume(tx < 32)  # names a thread index: a hint, never checked
            if tx < N:
                A[tx] = scale

    return assuming


@pytest.mark.parametrize("target", ["c", "llvm", "interpreter"])
def test_a_host_evaluable_assume_is_checked_at_each_call(
    target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if target == "interpreter":
        monkeypatch.setenv("TL_INTERPRET", "1")
    kernel = tl_jit.compile(_assuming(), target="c" if target == "interpreter" else target)
    held = np.zeros(8, np.float32)
    kernel(held, 2.0)
    np.testing.assert_array_equal(held, np.full(8, 2.0, np.float32))
    backing = np.zeros(8, np.float32)
    with pytest.raises(RuntimeError, match=r"Assume: N % 4 == 0"):
        kernel(backing[:2], 1.0)
    np.testing.assert_array_equal(backing, np.zeros(8, np.float32))


def test_only_conditions_on_the_callers_values_become_checks() -> None:
    script = _assuming().script()
    assert script.count("assert") == 1
    assert "N % 4 == 0" in script
