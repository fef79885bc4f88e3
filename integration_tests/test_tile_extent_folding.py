"""A tile sliced between two computed bounds whose difference is a constant
(``KV[kv_start:kv_end]``, MLA decode with several splits) has that constant extent on
every target; a bound assigned twice proves nothing and stays refused."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tl_ir
import tl_ir.language as T
import tl_jit
from tl_ir.errors import UnsupportedError


def split_copy(num_split: int = 2, N: int = 256, block_N: int = 32) -> Any:
    @T.prim_func
    def main(
        KV: T.Tensor((N, 16), "float32"), Out: T.Tensor((num_split, N // num_split, 16), "float32")
    ):
        with T.Kernel(num_split, threads=32) as bz:
            S = T.alloc_shared((block_N, 16), "float32")
            per = N // num_split
            for k in T.serial(per // block_N):
                kv_start = per * bz + k * block_N
                kv_end = per * bz + (k + 1) * block_N
                T.copy(KV[kv_start:kv_end, :], S)
                T.copy(S, Out[bz, k * block_N : (k + 1) * block_N, :])

    return main


def reassigned_bound(N: int = 64) -> Any:
    @T.prim_func
    def main(KV: T.Tensor((N, 16), "float32"), Out: T.Tensor((32, 16), "float32")):
        with T.Kernel(1, threads=32) as bz:
            S = T.alloc_shared((32, 16), "float32")
            start = bz * 8
            end = start + 32
            start = start + 4  # the extent is now 28 at run time, not 32
            T.copy(KV[start:end, :], S)
            T.copy(S, Out)

    return main


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_an_extent_equal_to_a_constant_is_that_constant(target: str) -> None:
    assert "kv_end - kv_start" not in tl_ir.format_ir(split_copy())
    kernel = tl_jit.compile(split_copy(), out_idx=[1], target=target)
    kv = np.random.default_rng(0).standard_normal((256, 16)).astype(np.float32)
    np.testing.assert_array_equal(kernel(kv), kv.reshape(2, 128, 16))


def test_a_bound_assigned_twice_is_not_folded() -> None:
    func = reassigned_bound()
    assert "end - start" in tl_ir.format_ir(func)
    with pytest.raises(UnsupportedError, match="symbolic extent"):
        tl_jit.compile(func, out_idx=[1], target="c")
