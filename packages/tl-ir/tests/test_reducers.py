"""TileLang's reducers: every contribution combined once, whatever the distribution."""

import numpy as np
import pytest

import tl_ir
import tl_ir.language as T
from tl_ir.interpret import run


def _row_reduce(op, init=None):
    @T.prim_func
    def main(A: T.Tensor((8, 16), "float32"), B: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32):
            acc = T.alloc_reducer((8,), "float32", op=op)
            out = T.alloc_fragment((8,), "float32")
            T.reducer_init(acc, init)
            for i, j in T.Parallel(8, 16):
                T.reducer_update(acc[i], A[i, j])
            T.finalize_reducer(acc, out)
            T.copy(out, B)

    return main


@pytest.mark.parametrize(
    ("op", "init", "expected"),
    [
        ("sum", None, lambda a: a.sum(1)),
        ("max", None, lambda a: a.max(1)),
        ("min", None, lambda a: a.min(1)),
        ("sum", 10.0, lambda a: a.sum(1) + 10),
    ],
)
def test_reducer_combines_every_contribution(op, init, expected):
    a = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)
    b = np.zeros(8, np.float32)
    run(_row_reduce(op, init), [a, b])
    np.testing.assert_allclose(b, expected(a), rtol=1e-5, atol=1e-5)


def test_legacy_and_bitwise_reducers_are_unsupported_errors():
    with pytest.raises(NotImplementedError, match="op='bitand'"):
        _row_reduce("bitand")

    def legacy():
        @T.prim_func
        def main(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32):
                acc = T.alloc_reducer((8,), "float32", op="sum")
                T.finalize_reducer(acc)

        return main

    with pytest.raises(tl_ir.UnsupportedError, match="legacy in-place form"):
        legacy()
