"""`cpu-eager-selects`: ``if_then_else`` with branches safe to compute becomes a select."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tvm
from cpu_passes_testing import make_pass

import tl_ir.language as T
import tl_runtime
from tl_backend_api import build_artifact, create_backend_context
from tl_codegen_cpu.passes.eager_selects import CpuEagerSelectsPass
from tl_passes import Pipeline


def mask_maxima(M: int, N: int, shifted: bool = False) -> Any:
    """Top-k's masking step: each row's maximum replaced by -10000 (``shifted``: the
    else branch reads the next column, which the last column must not)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128) as _bx:
            tile = T.alloc_fragment((M, N), "float32")
            row_max = T.alloc_fragment((M,), "float32")
            T.copy(A, tile)
            T.reduce_max(tile, row_max, dim=1, clear=True)
            for i, j in T.Parallel(M, N):
                if shifted:
                    tile[i, j] = T.if_then_else(j < N - 1, tile[i, j + 1], -10000.0)
                else:
                    tile[i, j] = T.if_then_else(row_max[i] == tile[i, j], -10000.0, tile[i, j])
            T.copy(tile, B)

    return main


def _after_pass(func: Any) -> str:
    passes = [make_pass(n) for n in ("cpu-lower-launch", "cpu-forward-copies")]
    passes.append(CpuEagerSelectsPass())
    module = Pipeline("test", tuple(passes)).run(
        tvm.IRModule({"main": func}), tvm.target.Target("llvm")
    )
    return str(module["main"].script())


def test_a_branch_reading_only_the_stored_element_becomes_a_select() -> None:
    script = _after_pass(mask_maxima(16, 64))
    assert "T.Select(row_max[i] == tile[i, j], T.float32(-10000.0), tile[i, j])" in script, script
    assert "if_then_else" not in script, script


def test_a_branch_reading_another_element_keeps_its_guard() -> None:
    script = _after_pass(mask_maxima(16, 64, shifted=True))
    assert "T.if_then_else(j < 63, tile[i, j + 1]" in script, script
    assert "T.Select" not in script, script


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_the_select_masks_what_numpy_masks(target: str, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    a = rng.standard_normal((16, 64)).astype(np.float32)
    b = np.full_like(a, np.nan)
    artifact = build_artifact(create_backend_context(target), mask_maxima(16, 64), tmp_path)
    tl_runtime.load(artifact)(a, b)
    want = np.where(a == a.max(axis=1, keepdims=True), np.float32(-10000.0), a)
    np.testing.assert_array_equal(b, want)
