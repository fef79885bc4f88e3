"""``T.annotate_layout({S: T.Layout(shape, fn)})`` on a shared tile is a hint
(docs/language.md, Hints): the tile keeps its row-major order on CUDA (the copy into it
is the straight vector copy of the source's rows, no transpose) and the kernel computes
what numpy does under the CPU emulation and on ``c``."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cuda_emulation as emu

import tl_ir.language as T
import tl_jit

needs_gxx = pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")


def transposed_layout_on_shared() -> Any:
    @T.prim_func
    def main(A: T.Tensor((8, 16), "float32"), B: T.Tensor((8, 16), "float32")):
        with T.Kernel(1, threads=32) as _bx:
            S = T.alloc_shared((8, 16), "float32")
            T.annotate_layout({S: T.Layout([8, 16], lambda i, j: (j, i))})
            T.copy(A, S)
            for i, j in T.Parallel(8, 16):
                B[i, j] = S[i, j] * 2 + S[7 - i, j]

    return main


def _expected(a: np.ndarray) -> np.ndarray:
    return a * 2 + a[::-1]


def test_the_layout_is_recorded_and_the_tile_stays_row_major_on_cuda() -> None:
    func = transposed_layout_on_shared()
    assert "S" in func.attrs["tl.layout_map"]
    source = emu.lower_for_cuda(func).files["main.cu"]
    # Thread t stores A's elements 4t..4t+3 at S's elements 4t..4t+3: row-major.
    copy = r"\*\(float4\*\)\(S_ptr \+ \(\(\(int\)threadIdx\.x\) \* 4\)\) = \*\(float4\*\)\(A_ptr \+ \(\(\(int\)threadIdx\.x\) \* 4\)\);"
    assert re.search(copy, source), source


@needs_gxx
def test_the_kernel_computes_what_numpy_does_under_emulation_and_on_c() -> None:
    a = np.arange(128, dtype=np.float32).reshape(8, 16)
    arrays = {"A": a, "B": np.zeros_like(a)}
    emu.emulate(transposed_layout_on_shared(), arrays)
    np.testing.assert_array_equal(arrays["B"], _expected(a))
    kernel = tl_jit.compile(transposed_layout_on_shared(), out_idx=[1], target="c")
    np.testing.assert_array_equal(kernel(a), _expected(a))
