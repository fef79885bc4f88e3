"""`cpu-interchange-grid-rows`: an elementwise grid of 2-D tiles walks whole rows."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tvm
from cpu_passes_testing import make_pass

import tl_ir.language as T
import tl_runtime
from tl_backend_api import build_artifact, create_backend_context
from tl_codegen_cpu.passes.interchange_grid_rows import CpuInterchangeGridRowsPass
from tl_passes import Pipeline


def staged_add(M: int, N: int, block_M: int, block_N: int, transposed: bool = False) -> Any:
    """TileLang's elementwise add (tiles staged through shared memory); ``transposed``
    reads B's tile transposed, which no row order makes contiguous."""

    @T.prim_func
    def main(
        A: T.Tensor((M, N), "float32"),
        B: T.Tensor((N, M) if transposed else (M, N), "float32"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_N), "float32")
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            T.copy(A[by * block_M, bx * block_N], A_shared)
            for i, j in T.Parallel(block_M, block_N):
                if transposed:
                    C_local[i, j] = A_shared[i, j] + B[bx * block_N + j, by * block_M + i]
                else:
                    C_local[i, j] = A_shared[i, j] + B[by * block_M + i, bx * block_N + j]
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def _after_pass(func: Any) -> str:
    passes = [make_pass(n) for n in ("cpu-lower-launch", "cpu-forward-copies")]
    passes.append(CpuInterchangeGridRowsPass())
    module = Pipeline("test", tuple(passes)).run(
        tvm.IRModule({"main": func}), tvm.target.Target("llvm")
    )
    return str(module["main"].script())


def test_the_grid_x_axis_moves_inside_the_tile_rows() -> None:
    script = _after_pass(staged_add(64, 96, 16, 32))
    # One parallel task per row of C (4 block rows x 16 tile rows), the 3 blocks of a
    # row one after the other, each a contiguous run of 32.
    assert "for row in T.parallel(64):" in script, script
    assert "for bx in range(3):" in script, script
    assert "block_id" not in script, script
    assert re.search(
        r"C\[row, bx \* 32 \+ (\w+)\] = A\[row, bx \* 32 \+ \1\] \+ B\[row, bx \* 32 \+ \1\]",
        script,
    ), script


@pytest.mark.parametrize(
    ("shape", "transposed"),
    [((60, 96), False), ((64, 96), True)],
    ids=["partial-tiles", "transposed-operand"],
)
def test_grids_without_a_contiguous_row_stay_as_they_are(
    shape: tuple[int, int], transposed: bool
) -> None:
    # Partial tiles: the in-bounds test is not true for every block. A transposed
    # operand: the next block's row is not where this block's row ends.
    script = _after_pass(staged_add(*shape, 16, 32, transposed=transposed))
    assert "for block_id in T.parallel(12):" in script, script
    assert "bx" not in script, script


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_the_row_order_computes_what_numpy_does(target: str, tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    a = rng.standard_normal((64, 96)).astype(np.float32)
    b = rng.standard_normal((64, 96)).astype(np.float32)
    c = np.full((64, 96), np.nan, np.float32)
    context = create_backend_context(target)
    artifact = build_artifact(context, staged_add(64, 96, 16, 32), tmp_path / target)
    if target == "c":
        source = (tmp_path / target / "kernel.c").read_text()
        assert "for (int32_t bx = 0; bx < 3; ++bx)" in source
    tl_runtime.load(artifact)(a, b, c)
    np.testing.assert_array_equal(c, a + b)
