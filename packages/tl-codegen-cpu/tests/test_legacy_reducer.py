"""TileLang's GEMV example with the legacy reducer (``T.alloc_reducer(...,
replication="all")``, ``acc[i] += ...`` in a T.Parallel loop, in-place
``T.finalize_reducer(acc)``), on c and llvm against numpy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tl_ir.language as T
import tl_runtime
from tl_backend_api import build_artifact, create_backend_context

TARGETS = ("c", "llvm")


def gemv_alloc_reducer(
    M: int, N: int, block_M: int = 32, block_N: int = 32, replication: str = "all"
) -> Any:
    """TileLang's ``gemv_alloc_reducer`` (examples/gemv), its body verbatim, as a
    prim_func of fixed sizes."""
    dtype, accum_dtype = "float16", "float"

    @T.prim_func
    def main(a: T.Tensor((M, N), dtype), x: T.Tensor((N,), dtype), o: T.Tensor((M,), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=64) as i0_m:
            o_reducer = T.alloc_reducer(block_M, accum_dtype, replication=replication)
            T.clear(o_reducer)
            for i0_n in T.Pipelined(T.ceildiv(N, block_N), num_stages=2):
                a_smem = T.alloc_shared((block_M, block_N), dtype)
                T.copy(a[i0_m * block_M, i0_n * block_N], a_smem)
                a_frag = T.alloc_fragment((block_M, block_N), dtype)
                T.copy(a_smem, a_frag)
                x_frag = T.alloc_fragment(block_N, dtype)
                T.copy(x[i0_n * block_N], x_frag)
                for i1_m, i1_n in T.Parallel(block_M, block_N):
                    o_reducer[i1_m] += a_frag[i1_m, i1_n] * x_frag[i1_n]
            T.finalize_reducer(o_reducer)
            T.copy(o_reducer, o[i0_m * block_M])

    return main


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("replication", ["all", "none"])
def test_the_legacy_reducer_gemv_matches_numpy(
    target: str, replication: str, tmp_path: Path
) -> None:
    rng = np.random.default_rng(7)
    a = rng.standard_normal((64, 96)).astype(np.float16)
    x = rng.standard_normal(96).astype(np.float16)
    context = create_backend_context(target)
    func = gemv_alloc_reducer(64, 96, replication=replication)
    kernel = tl_runtime.load(build_artifact(context, func, tmp_path / target, out_idx=[2]))
    o = kernel(a, x)
    expected = a.astype(np.float32) @ x.astype(np.float32)
    np.testing.assert_allclose(o.astype(np.float32), expected, rtol=1e-2, atol=1e-2)
