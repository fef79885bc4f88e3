"""A module-level eager kernel for autotuning tests (worker processes import it)."""

from __future__ import annotations

from typing import Any

import tl_jit
import tl_jit.language as T


@tl_jit.jit(target="c")
def repeated_add(A: Any, B: Any, repeat: int = 1) -> Any:
    """``C = A + B``, computed ``repeat`` times (each round reads the previous one's result,
    so the work grows with ``repeat`` and the answer does not)."""
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]
    C = T.empty((N,), T.float32)
    with T.Kernel(1, threads=1) as _:
        for i in T.serial(N):
            C[i] = T.float32(-3.0e38)
        for _round in T.serial(repeat):
            for i in T.serial(N):
                C[i] = T.max(C[i], A[i] + B[i])
    return C


def reference(a: Any, b: Any) -> Any:
    """What every configuration computes."""
    return a + b
