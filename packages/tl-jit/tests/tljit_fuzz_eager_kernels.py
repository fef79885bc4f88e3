"""Eager kernels the eager-call fuzz (`fuzz_eager.py`) calls, one set per CPU adapter.

Each kernel has a numpy reference (`REFERENCES`) that computes what the documented
rules say: float32 arithmetic (a multiply-add may be fused, so floats compare within a
tolerance), integer arithmetic that wraps in the element's dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tl_jit
import tl_jit.language as T


def make_kernels(adapter: str) -> dict[str, Any]:
    """The fuzzed eager kernels, built for ``adapter`` on the ``c`` target."""

    @tl_jit.jit(target="c", execution_backend=adapter)
    def axpy(X: Any, Y: Any, scale: float = 1.0) -> Any:
        """``Z = X * scale + Y`` over a run-time length (``T.dynamic``), ``Z`` allocated."""
        N = T.dynamic("N")
        X: T.Tensor[[N], T.float32]
        Y: T.Tensor[[N], T.float32]
        Z = T.empty((N,), T.float32)
        with T.Kernel(T.ceildiv(N, 64), threads=1) as bx:
            for i in T.serial(64):
                if bx * 64 + i < N:
                    Z[bx * 64 + i] = X[bx * 64 + i] * scale + Y[bx * 64 + i]
        return Z

    @tl_jit.jit(target="c", execution_backend=adapter)
    def row_sums(A: Any, B: Any, bias: int = 0) -> None:
        """``B[m] = sum(A[m, :]) + bias`` in int64, written in place; shapes are
        ``T.const`` (one kernel per shape)."""
        M, K = T.const("M, K")
        A: T.Tensor[[M, K], T.int32]
        B: T.Tensor[[M], T.int64]
        with T.Kernel(M, threads=1) as bx:
            acc = T.alloc_var("int64", init=bias)
            for k in T.serial(K):
                acc += T.cast(A[bx, k], "int64")
            B[bx] = acc

    @tl_jit.jit(target="c", execution_backend=adapter)
    def add_wrapping(P: Any, Q: Any) -> Any:
        """``R = P + Q`` in int8 (wrapping), over run-time rows and columns."""
        M, N = T.dynamic("M, N")
        P: T.Tensor[[M, N], T.int8]
        Q: T.Tensor[[M, N], T.int8]
        R = T.empty((M, N), T.int8)
        with T.Kernel(M, threads=1) as bx:
            for j in T.serial(N):
                R[bx, j] = P[bx, j] + Q[bx, j]
        return R

    return {"axpy": axpy, "row_sums": row_sums, "add_wrapping": add_wrapping}


def _axpy(x: Any, y: Any, scale: Any = 1.0) -> Any:
    if scale == 0:
        # ``x * 0.0`` with a constant zero is folded to zero when the kernel is built
        # (docs/language.md; TileLang does the same): inf * 0 gives 0, not NaN.
        return (np.zeros_like(x) + y).astype(np.float32)
    with np.errstate(all="ignore"):
        return (x.astype(np.float64) * np.float32(scale) + y).astype(np.float32)


def _row_sums(a: Any, b: Any, bias: int = 0) -> Any:
    return a.astype(np.int64).sum(axis=1) + np.int64(bias)


def _add_wrapping(p: Any, q: Any) -> Any:
    return (p.astype(np.int16) + q).astype(np.int8)


REFERENCES = {"axpy": _axpy, "row_sums": _row_sums, "add_wrapping": _add_wrapping}
"""kernel name -> numpy reference: the returned output, or (row_sums) what ``B`` holds."""
