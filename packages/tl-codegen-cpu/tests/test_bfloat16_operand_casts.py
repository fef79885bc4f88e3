"""A bfloat16 tile divided by a float32 scale and narrowed to float16 or fp8 (TileLang's
DeepSeek-V4 ``fp8_quant_kernel``): `cpu-float16-bits` and `cpu-legalize-float8` leave
such an operand unbound by a ``Let``, since TVM's ``BF16ComputeLegalize`` retypes the
bfloat16 tile but not a load of it inside a ``Let`` value, and TVM's code generators then
refused the function (a variable used but not defined on ``c``, a load before its
declaration on ``llvm``)."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

import tl_ir.language as T
import tl_jit


def _scaled_narrowing(target_dtype: str) -> Any:
    @T.prim_func
    def main(X: T.Tensor((32, 128), "bfloat16"), Y: T.Tensor((32, 128), target_dtype)):
        with T.Kernel(1, threads=128) as _bx:
            x_local = T.alloc_fragment((32, 128), "bfloat16")
            scale = T.alloc_fragment((32,), "float32")
            y_local = T.alloc_fragment((32, 128), target_dtype)
            T.copy(X, x_local)
            for i in T.Parallel(32):
                scale[i] = T.Cast("float32", i + 1) * 0.25
            for i, j in T.Parallel(32, 128):
                y_local[i, j] = x_local[i, j] / scale[i]
            T.copy(y_local, Y)

    return main


@pytest.mark.parametrize("target", ["c", "llvm"])
@pytest.mark.parametrize(
    ("target_dtype", "numpy_dtype"),
    [("float16", np.float16), ("float8_e4m3fn", ml_dtypes.float8_e4m3fn)],
)
def test_a_bfloat16_operand_narrows_like_numpy(
    target: str, target_dtype: str, numpy_dtype: Any
) -> None:
    x = (np.random.default_rng(5).standard_normal((32, 128)) * 8).astype(ml_dtypes.bfloat16)
    kernel = tl_jit.compile(_scaled_narrowing(target_dtype), out_idx=[1], target=target)
    got = np.asarray(kernel(x))
    scale = (np.arange(1, 33, dtype=np.float32) * np.float32(0.25))[:, None]
    want = (x.astype(np.float32) / scale).astype(numpy_dtype)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
