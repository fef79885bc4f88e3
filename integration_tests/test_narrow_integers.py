"""8- and 16-bit integer arithmetic wraps at its width on every CPU target: C promotes
such operands to int, so TVM's C computed the sign extension of a nibble, a uint8
difference or an int16 product at 32 bits (llvm was right)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tl_ir.language as T
import tl_jit

N = 16


def _kernel() -> Any:
    @T.prim_func
    def narrow(
        A: T.Tensor((N,), "int8"),
        B: T.Tensor((N,), "uint8"),
        H: T.Tensor((N,), "int16"),
        S: T.Tensor((N,), "int8"),
        U: T.Tensor((N,), "int32"),
        P: T.Tensor((N,), "int32"),
        G: T.Tensor((N,), "int32"),
    ):
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(N):
                S[i] = (A[i] << T.int8(4)) >> T.int8(4)
                U[i] = T.cast(B[i] - B[(i + 1) % N], "int32")
                P[i] = T.cast(H[i] * H[i], "int32")
                G[i] = T.if_then_else(B[i] + B[i] > T.uint8(200), 1, 0)

    return narrow


@pytest.mark.parametrize("target", ["c", "llvm"])
@pytest.mark.parametrize("adapter", ["cython", "tvm_ffi"])
def test_narrow_integer_arithmetic_wraps_at_its_width(target: str, adapter: str) -> None:
    kernel = tl_jit.compile(
        _kernel(), out_idx=[3, 4, 5, 6], target=target, execution_backend=adapter
    )
    a = (np.arange(-8, 8) * 9).astype(np.int8)
    b = (np.arange(N) * 17).astype(np.uint8)
    h = (np.arange(N) * 3000 - 20000).astype(np.int16)
    s, u, p, g = kernel(a, b, h)
    np.testing.assert_array_equal(s, ((a << 4).astype(np.int8) >> 4).astype(np.int8))
    np.testing.assert_array_equal(u, (b - np.roll(b, -1)).astype(np.uint8).astype(np.int32))
    np.testing.assert_array_equal(p, (h * h).astype(np.int16).astype(np.int32))
    np.testing.assert_array_equal(g, ((b + b).astype(np.uint8) > 200).astype(np.int32))
