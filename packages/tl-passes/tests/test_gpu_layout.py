"""Fragment layouts: the default partition covers each element once; inference picks
replicated fragments where threads share them; annotated layouts are evaluated."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

import tl_ir.language as T
from integration_tests.kernels import load
from tl_passes.gpu.layout import (
    ANNOTATED,
    PARTITIONED,
    REPLICATED,
    FragmentLayout,
    LayoutError,
    default_vector,
    infer_fragment_layouts,
)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(1, 40),
    cols=st.sampled_from([1, 2, 3, 4, 6, 8, 16, 30, 32, 64]),
    threads=st.sampled_from([32, 64, 128, 256]),
)
def test_default_layout_gives_every_element_to_exactly_one_thread(
    rows: int, cols: int, threads: int
) -> None:
    shape = (rows, cols)
    layout = FragmentLayout("f", shape, threads, PARTITIONED, default_vector(shape, threads))
    seen: dict[int, tuple[int, int]] = {}
    for thread in range(threads):
        for local in range(layout.local_size):
            flat, valid = layout.element_of(thread, local)
            if valid is not None and not valid:
                continue
            assert flat < rows * cols
            assert flat not in seen, (flat, seen.get(flat), (thread, local))
            seen[flat] = (thread, local)
    assert len(seen) == rows * cols


def test_default_vector_is_the_widest_that_divides() -> None:
    assert default_vector((64, 64), 128) == 4
    assert default_vector((16, 6), 128) == 2
    assert default_vector((3, 5), 128) == 1


def test_softmax_keeps_the_row_tile_partitioned_and_row_stats_replicated() -> None:
    module = load("softmax")
    func = module.KERNEL(**module.CASES[0]["args"])
    layouts = infer_fragment_layouts(func, 128)
    assert layouts["x"].kind == PARTITIONED
    assert layouts["row_max"].kind == REPLICATED
    assert layouts["row_sum"].kind == REPLICATED


def test_a_parallel_loop_writing_a_replicated_fragment_replicates_what_it_touches() -> None:
    @T.prim_func
    def main(A: T.Tensor((16, 8), "float32"), B: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32) as _bx:
            tile = T.alloc_fragment((16, 8), "float32")
            acc = T.alloc_fragment((16,), "float32")
            other = T.alloc_fragment((16,), "float32")
            T.copy(A[0, 0], tile)
            T.reduce_sum(tile, acc, dim=1)
            for i in T.Parallel(16):
                other[i] = acc[i] * 2.0
                acc[i] = other[i]
            T.copy(acc, B[0])

    layouts = infer_fragment_layouts(main, 32)
    assert layouts["tile"].kind == PARTITIONED
    assert layouts["acc"].kind == REPLICATED
    assert layouts["other"].kind == REPLICATED


def test_annotated_layout_is_evaluated_and_checked() -> None:
    @T.prim_func
    def main(A: T.Tensor((8, 8), "float32"), B: T.Tensor((8, 8), "float32")):
        with T.Kernel(1, threads=32) as _bx:
            frag = T.alloc_fragment((8, 8), "float32")
            T.annotate_layout({frag: lambda i, j: ((i * 8 + j) % 32, (i * 8 + j) // 32)})
            T.copy(A[0, 0], frag)
            T.copy(frag, B[0, 0])

    layout = infer_fragment_layouts(main, 32)["frag"]
    assert layout.kind == ANNOTATED
    assert layout.local_size == 2
    with pytest.raises(LayoutError, match="thread"):
        infer_fragment_layouts(main, 16)
