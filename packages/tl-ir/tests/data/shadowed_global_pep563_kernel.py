"""As shadowed_global_kernel, with PEP 563 string annotations (loaded by path from the
tests)."""

from __future__ import annotations

import tl_ir.language as T

N = 16  # the builder's argument N must win over this global
dtype = "float64"  # likewise for the builder's dtype


def copy_kernel(N, dtype="float32"):
    @T.prim_func
    def main(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype)):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(8):
                Y[i] = X[i]

    return main
