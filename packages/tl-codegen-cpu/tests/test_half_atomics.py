"""16-bit float atomics on the CPU (T.atomic_addx2 on fp16 tiles, T.atomic_add on bf16):
a compare-and-swap on the 16-bit word, float32 arithmetic rounded to nearest even, the
same bits numpy gives; contended parallel updates count every contribution."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import tvm
from cpu_passes_testing import build_prepared_c
from tvm import tirx

from tl_codegen_cpu import build_llvm
from tl_codegen_cpu.lowering import TileRegion, emit_atomic_update, emit_tile_atomic
from tl_codegen_cpu.lowering.atomics import HALF_ATOMIC_DTYPES

_NUMPY = {"float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16)}


def _special_values(dtype: str, count: int) -> np.ndarray:
    rng = np.random.default_rng(1)
    np_dtype = _NUMPY[dtype]
    finfo = ml_dtypes.finfo(np_dtype)
    picks = np.concatenate(
        [
            rng.standard_normal(count - 8) * rng.choice([1e-6, 1e-3, 1.0, 1e3, 3e4], count - 8),
            [
                float(finfo.tiny) / 4,
                float(finfo.max),
                -float(finfo.max),
                0.0,
                -0.0,
                1.0,
                np.inf,
                0.5,
            ],
        ]
    )
    with np.errstate(over="ignore"):
        return picks.astype(np.float32).astype(np_dtype)


@pytest.mark.parametrize("builder", [build_prepared_c, build_llvm])
@pytest.mark.parametrize("dtype", HALF_ATOMIC_DTYPES)
@pytest.mark.parametrize("kind", ["add", "max"])
@pytest.mark.parametrize("owned", [False, True], ids=["atomic", "owned"])
def test_elementwise_half_atomics_round_like_numpy(
    builder: object, dtype: str, kind: str, owned: bool, tmp_path: Path
) -> None:
    # owned: the plain read-modify-write rounds exactly as the compare-and-swap does.
    n = 512
    src = tirx.decl_buffer((n,), dtype, name="S")
    out = tirx.decl_buffer((n,), dtype, name="Out")
    body = emit_tile_atomic(TileRegion.whole(out), TileRegion.whole(src), kind, owned=owned)
    func = tirx.PrimFunc([src, out], body).with_attrs({"global_symbol": "main"})
    result = builder(tvm.IRModule({"main": func}), tmp_path)  # type: ignore[operator]
    lib = tvm.runtime.load_module(str(result.library_path))
    s = _special_values(dtype, n)
    d = np.roll(_special_values(dtype, n), 7)
    out_arr = tvm.runtime.tensor(d.copy())
    lib["main"](tvm.runtime.tensor(s), out_arr)
    a32, b32 = d.astype(np.float32), s.astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        want32 = a32 + b32 if kind == "add" else np.where(b32 > a32, b32, a32)
        want = want32.astype(_NUMPY[dtype])
    got = out_arr.numpy()
    np.testing.assert_array_equal(np.isnan(got.astype(np.float32)), np.isnan(want32))
    finite = ~np.isnan(want32)
    np.testing.assert_array_equal(got[finite].view(np.uint16), want[finite].view(np.uint16))


@pytest.mark.parametrize("dtype", HALF_ATOMIC_DTYPES)
def test_contended_half_adds_count_every_contribution(dtype: str, tmp_path: Path) -> None:
    iterations = 4000
    i = tirx.Var("i", "int32")
    out = tirx.decl_buffer((4,), dtype, name="Out")
    body = tirx.For(i, 0, iterations, tirx.ForKind.PARALLEL, emit_atomic_update(out, [i % 4], 1.0))
    func = tirx.PrimFunc([out], body).with_attrs({"global_symbol": "main"})
    lib = tvm.runtime.load_module(
        str(build_llvm(tvm.IRModule({"main": func}), tmp_path).library_path)
    )
    out_arr = tvm.runtime.tensor(np.zeros(4, _NUMPY[dtype]))
    lib["main"](out_arr)
    # 1000 = exact in fp16 (and bf16 stops at 256: 256 + 1 rounds back to 256).
    want = 1000.0 if dtype == "float16" else 256.0
    np.testing.assert_array_equal(out_arr.numpy().astype(np.float32), np.full(4, want))
