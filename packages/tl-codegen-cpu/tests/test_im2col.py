"""``T.im2col`` on c and llvm: every tile of the im2col matrix against numpy's (stride,
dilation, padding, and sizes that are not whole tiles), and TileLang's convolution
example (im2col tiles into a pipelined T.gemm) against numpy's convolution."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

import tl_ir.language as T
import tl_runtime
from integration_tests.builtin_kernels import convolution, im2col_tiles, numpy_im2col
from tl_backend_api import build_artifact, create_backend_context
from tl_ir.errors import KernelTypeError

TARGETS = ("c", "llvm")


def _load(func: Any, target: str, tmp_path: Path) -> Any:
    return tl_runtime.load(build_artifact(create_backend_context(target), func, tmp_path / target))


@pytest.mark.parametrize("target", TARGETS)
def test_every_tile_is_numpys_im2col(target: str, tmp_path: Path) -> None:
    N, H, W, C, K, S, D, P = 2, 7, 6, 3, 3, 2, 2, 2
    data = np.random.default_rng(3).standard_normal((N, H, W, C)).astype(np.float32)
    expected = numpy_im2col(data, K, S, D, P)  # 24 x 27: 2 x 2 tiles of 16 x 16, ragged
    cols = np.full((32, 32), np.nan, np.float32)
    _load(im2col_tiles(N, H, W, C, K, S, D, P, 16, 16), target, tmp_path)(data, cols)
    np.testing.assert_array_equal(cols[: expected.shape[0], : expected.shape[1]], expected)
    # past the matrix's end: zeros (TileLang would read beyond the image there)
    assert not cols[expected.shape[0] :].any() and not cols[:, expected.shape[1] :].any()


@pytest.mark.parametrize("target", TARGETS)
def test_tilelangs_convolution_example_matches_numpy(target: str, tmp_path: Path) -> None:
    N, C, H, W, F, K, S, D, P = 2, 16, 8, 8, 32, 3, 1, 1, 1
    rng = np.random.default_rng(5)
    data = rng.standard_normal((N, H, W, C)).astype(np.float16)
    kernel = rng.standard_normal((K, K, C, F)).astype(np.float16)
    out = np.zeros((N, H, W, F), np.float16)
    func = convolution(N, C, H, W, F, K, S, D, P, 32, 32, 16, 2, 128)
    _load(func, target, tmp_path)(data, kernel, out)
    patches = numpy_im2col(data.astype(np.float32), K, S, D, P)
    expected = (patches @ kernel.astype(np.float32).reshape(K * K * C, F)).reshape(out.shape)
    np.testing.assert_allclose(out.astype(np.float32), expected, rtol=2e-2, atol=2e-2)


def test_bad_im2col_arguments_name_the_parameter() -> None:
    def build(**overrides: Any) -> Any:
        args = {"kernel": 3, "stride": 1, "dilation": 1, "pad": 1, **overrides}

        @T.prim_func
        def main(data: T.Tensor((1, 4, 4, 2), "float32"), dst: T.Tensor((16, 18), "float16")):
            with T.Kernel(1, threads=32) as _bx:
                tile = T.alloc_shared((16, 18), args.pop("dtype", "float32"))
                T.im2col(data, tile, 0, 0, **args)
                T.copy(tile, dst)

        return main

    with pytest.raises(KernelTypeError, match=r"T.im2col\(stride=...\): expected an integer >= 1"):
        build(stride=0)
    with pytest.raises(KernelTypeError, match=r"img and col must have one dtype"):
        build(dtype="float16")
    with pytest.raises(KernelTypeError, match=r"eviction_policy=...\): expected one of"):
        build(eviction_policy="evict_sometimes")
