"""Who runs an atomic, in the reference interpreter as in TileLang: a scalar atomic outside
a ``T.Parallel`` loop is each thread's own update (it runs once per thread of the block);
in a ``T.Parallel`` loop once per element; a tile atomic once per element of the tile."""

import numpy as np

import tl_ir.language as T
from tl_ir.interpret import run

THREADS = 8
BLOCKS = 3


def test_a_scalar_atomic_outside_parallel_runs_once_per_thread():
    @T.prim_func
    def main(
        A: T.Tensor((BLOCKS, THREADS), "float32"),
        Count: T.Tensor((BLOCKS,), "int32"),
        PerElement: T.Tensor((1,), "float32"),
        Tile: T.Tensor((THREADS,), "float32"),
    ):
        with T.Kernel(BLOCKS, threads=THREADS) as bx:
            T.atomic_add(Count[bx], 1)
            for i in T.Parallel(THREADS):
                T.atomic_add(PerElement[0], A[bx, i])
            T.atomic_add(Tile[0], A[bx, 0:THREADS])

    a = np.arange(BLOCKS * THREADS, dtype=np.float32).reshape(BLOCKS, THREADS)
    _, count, per_element, tile = run(
        main,
        [a, np.zeros(BLOCKS, np.int32), np.zeros(1, np.float32), np.zeros(THREADS, np.float32)],
    )
    np.testing.assert_array_equal(count, np.full(BLOCKS, THREADS))
    np.testing.assert_array_equal(per_element, [a.sum()])
    np.testing.assert_array_equal(tile, a.sum(axis=0))
