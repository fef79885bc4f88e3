"""A kernel whose integer conversions and comparisons TVM's simplifier used to fold
(``T.cast(u32, "int32") < 0`` to false, ``x == INT32_MIN`` to false) and whose 8-bit
arithmetic a C-like language promotes to ``int``: the GPU source suites lower it to
check that each backend's pipeline keeps the IR's meaning in the printed source."""

from __future__ import annotations

from typing import Any

import tl_ir.language as T


def integer_rule_kernel(*, narrow: bool = True) -> Any:
    """``Out[0] = cast(A, int32) < 0``, ``Out[1] = max(cast(A, int32), 0)``,
    ``Out[2] = M == INT32_MIN`` and, when ``narrow``, ``Out[3] = max(B >> 2, B + B) // 3``
    on int8 ``B`` (``A`` uint32, ``M`` int32, 8 threads)."""
    if narrow:

        @T.prim_func
        def integer_rules(
            A: T.Tensor((8,), "uint32"),
            M: T.Tensor((8,), "int32"),
            B: T.Tensor((8,), "int8"),
            Out: T.Tensor((4, 8), "int32"),
        ):
            with T.Kernel(1, threads=8) as _bx:
                for i in T.Parallel(8):
                    Out[0, i] = T.if_then_else(T.cast(A[i], "int32") < 0, 1, 0)
                    Out[1, i] = T.max(T.cast(A[i], "int32"), 0)
                    Out[2, i] = T.if_then_else(M[i] == T.int32(-2147483648), 1, 0)
                    Out[3, i] = T.cast(T.max(B[i] >> 2, B[i] + B[i]) // 3, "int32")

        return integer_rules

    @T.prim_func
    def integer_rules_32(
        A: T.Tensor((8,), "uint32"), M: T.Tensor((8,), "int32"), Out: T.Tensor((3, 8), "int32")
    ):
        with T.Kernel(1, threads=8) as _bx:
            for i in T.Parallel(8):
                Out[0, i] = T.if_then_else(T.cast(A[i], "int32") < 0, 1, 0)
                Out[1, i] = T.max(T.cast(A[i], "int32"), 0)
                Out[2, i] = T.if_then_else(M[i] == T.int32(-2147483648), 1, 0)

    return integer_rules_32
