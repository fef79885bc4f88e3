"""``T.Persistent``: every tile of the domain visited exactly once across the workers."""

import numpy as np
import pytest

import tl_ir
import tl_ir.language as T
from tl_ir.errors import KernelValueError
from tl_ir.interpret import run


def _visit(MB, NB, workers, group_size):
    @T.prim_func
    def main(Visited: T.Tensor((MB, NB), T.int32)):
        with T.Kernel(workers, threads=1) as block_id:
            for bx, by in T.Persistent([MB, NB], workers, block_id, group_size):
                Visited[bx, by] += 1

    return main


@pytest.mark.parametrize(
    ("MB", "NB", "workers", "group_size"),
    [(4, 6, 3, 8), (5, 7, 4, 2), (3, 3, 16, 8), (1, 9, 2, 4)],
)
def test_every_tile_is_visited_once(MB, NB, workers, group_size):
    visited = np.zeros((MB, NB), np.int32)
    run(_visit(MB, NB, workers, group_size), [visited])
    np.testing.assert_array_equal(visited, np.ones((MB, NB), np.int32))


def test_three_dim_domain_and_loop_kind():
    @T.prim_func
    def main(Visited: T.Tensor((2, 3, 5), T.int32)):
        with T.Kernel(4, threads=1) as block_id:
            for i, j, k in T.Persistent([2, 3, 5], 4, block_id):
                Visited[i, j, k] += 1

    (loop,) = [lp for lp in tl_ir.loops(main) if tl_ir.loop_kind(lp) == "serial"]
    assert int(loop.extent) == 8  # ceil(2 * 3 * 5 / 4) waves
    visited = np.zeros((2, 3, 5), np.int32)
    run(main, [visited])
    np.testing.assert_array_equal(visited, 1)


def test_bad_domain_is_refused():
    def build():
        @T.prim_func
        def main(A: T.Tensor((4,), T.int32)):
            with T.Kernel(2, threads=1) as b:
                for i in T.Persistent([], 2, b):
                    A[i] = 1

        return main

    with pytest.raises(tl_ir.KernelTypeError, match="non-empty list"):
        build()


@pytest.mark.parametrize(
    ("wave_size", "group_size", "message"),
    [
        (
            0,
            8,
            r"Persistent\(wave_size=...\): expected a positive int \(the number of workers\), got 0",
        ),
        (-3, 8, r"wave_size=...\): expected a positive int .*got -3"),
        (2, 0, r"T.Persistent\(group_size=...\): expected a positive int .*got 0"),
        (2, -2, r"group_size=...\): expected a positive int .*got -2"),
    ],
)
def test_non_positive_wave_and_group_sizes_are_refused_by_name(wave_size, group_size, message):
    # wave_size=0 said "T.ceildiv(a, b): expected b to be non-zero"; group_size 0 or -2
    # was taken as 1.
    def build():
        @T.prim_func
        def main(A: T.Tensor((4, 4), T.int32)):
            with T.Kernel(2, threads=1) as b:
                for i, j in T.Persistent([4, 4], wave_size, b, group_size):
                    A[i, j] = 1

        return main

    with pytest.raises(KernelValueError, match=message):
        build()
