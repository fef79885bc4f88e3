"""An ``if`` or ``assert`` on the arguments before the declarations of an eager kernel
runs as Python with them (TileLang's NSA kernels start so); one that holds kernel code
is still refused."""

from __future__ import annotations

import numpy as np
import pytest

import tl_jit
import tl_jit.language as T
from tl_ir.errors import KernelSyntaxError


@tl_jit.jit(target="c")
def scaled(A, scale=None, block=32):
    N = T.const("N")
    if scale is None:  # noqa: SIM108 - the if TileLang programs write
        scale = 2.0
    else:
        scale = scale * 1.0
    assert block % 32 == 0, "block must be a multiple of 32"
    A: T.Tensor((N,), T.float32)
    B = T.empty((N,), T.float32)
    with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
        for i in T.Parallel(block):
            B[bx * block + i] = A[bx * block + i] * scale
    return B


def test_checks_and_choices_before_the_declarations_run_as_python() -> None:
    a = np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(scaled(a), a * 2)
    np.testing.assert_array_equal(scaled(a, 3.0), a * 3)
    with pytest.raises(AssertionError, match="multiple of 32"):
        scaled(a, block=48)


def test_kernel_code_before_a_declaration_is_still_refused() -> None:
    @tl_jit.jit(target="c")
    def early(A, flag=True):
        N = T.const("N")
        if flag:
            with T.Kernel(1, threads=1) as _bx:
                pass
        A: T.Tensor((N,), T.float32)
        return None

    with pytest.raises(KernelSyntaxError, match="must come before the kernel body"):
        early(np.zeros(4, np.float32))


@tl_jit.jit(target="c")
def doubled(x):
    n = T.const("n")
    dtype: str = T.float32  # TileLang's dsa indexer_bwd: `dtype: str = BF16`
    x: T.Tensor([n], dtype)
    y = T.empty([n], dtype)
    with T.Kernel(1, threads=32):
        for i in T.Parallel(n):
            y[i] = x[i] * 2
    return y


def test_an_annotated_assignment_before_the_declarations_runs_as_python() -> None:
    # It was left to the kernel body: the declaration after it named an unknown dtype.
    x = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(doubled(x), x * 2)
