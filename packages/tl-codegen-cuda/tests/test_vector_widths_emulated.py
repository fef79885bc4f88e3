"""Vector loads and stores in widths TVM's CUDA printer writes correctly
(``cuda-legalize-vectors``). A vector of 4 bools was a ``ushort4`` (2 bytes per bool:
every other element read back False and 4 bytes past the group were overwritten);
``T.vectorized(32)`` of bool, ``T.vectorized(5)`` of uint32 or ``T.vectorized(16)`` of
int16 stopped the codegen. Values under the CPU emulation (with guard bytes after the
output), the generated source, and nvcc compiling it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cuda_emulation as emu

import tl_ir.language as T

pytestmark = pytest.mark.skipif(not emu.gxx_available(), reason="g++ or cuda.h missing")
_NUMPY = {"bool": np.bool_, "bfloat16": ml_dtypes.bfloat16}


def _bool_copy() -> Any:
    @T.prim_func
    def bool_copy(A: T.Tensor((8,), "int32"), Out: T.Tensor((8,), "bool")):
        with T.Kernel(1, threads=32):
            f = T.alloc_fragment((8,), "int32")
            T.copy(A, f)
            T.copy(f, Out)

    return bool_copy


def _vector_kernel(tmp_path: Path, dtype: str, lanes: int, body: str, out: str) -> Any:
    """A kernel of two blocks, each a ``T.vectorized(lanes)`` loop of ``body`` (in a
    file: the frontend reads kernel source)."""
    text = f'''import tl_ir.language as T

@T.prim_func
def kern(A: T.Tensor((2, {lanes}), "{dtype}"), B: T.Tensor((2, {lanes}), "{dtype}"),
         O: T.Tensor((2, {lanes}), "{out}")):
    with T.Kernel(2, threads=1) as bx:
        for i in T.vectorized({lanes}):
            O[bx, i] = {body}
'''
    path = tmp_path / f"kern_{dtype}_{lanes}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.kern


def _nvcc(source: str, tmp_path: Path) -> None:
    emu.check_nvcc_builds(source, tmp_path)


def test_bool_vector_store_writes_one_byte_per_element(tmp_path: Path) -> None:
    sources = emu.lower_for_cuda(_bool_copy())
    source = sources.files["main.cu"]
    assert "ushort" not in source.split('extern "C" __global__')[-1]
    a = np.array([1, 2, 3, 4, 5, 6, 7, 8], np.int32)
    guarded = np.zeros(16, np.bool_)
    arrays = {"A": a, "Out": guarded[:8]}
    emu.emulate(_bool_copy(), arrays, sources=sources)
    np.testing.assert_array_equal(arrays["Out"], a != 0)
    assert not guarded[8:].any()
    _nvcc(source, tmp_path)


@pytest.mark.parametrize(
    ("dtype", "lanes"),
    [
        ("bool", 4),
        ("bool", 32),
        ("int8", 5),
        ("uint8", 32),
        ("int16", 16),
        ("uint32", 5),
        ("float16", 16),
        ("bfloat16", 3),
        ("int64", 8),
    ],
)
def test_vectorized_copy_of_any_width(dtype: str, lanes: int, tmp_path: Path) -> None:
    kern = _vector_kernel(tmp_path, dtype, lanes, "A[bx, i]", dtype)
    sources = emu.lower_for_cuda(kern)
    rng = np.random.default_rng(lanes)
    high = 2 if dtype == "bool" else 100
    a = rng.integers(0, high, (2, lanes)).astype(_NUMPY.get(dtype, dtype))
    guarded = np.zeros(2 * lanes + 16, _NUMPY.get(dtype, dtype))
    arrays = {"A": a, "B": a, "O": guarded[: 2 * lanes].reshape(2, lanes)}
    emu.emulate(kern, arrays, sources=sources)
    np.testing.assert_array_equal(arrays["O"], a)
    assert not guarded[2 * lanes :].astype(np.float64).any()
    _nvcc(sources.files["main.cu"], tmp_path)


@pytest.mark.parametrize(("dtype", "lanes"), [("int32", 4), ("int8", 8), ("float32", 16)])
def test_vectorized_comparison_stored_as_bool(dtype: str, lanes: int, tmp_path: Path) -> None:
    kern = _vector_kernel(tmp_path, dtype, lanes, "A[bx, i] < B[bx, i]", "bool")
    sources = emu.lower_for_cuda(kern)
    rng = np.random.default_rng(0)
    a = rng.integers(0, 100, (2, lanes)).astype(dtype)
    b = rng.integers(0, 100, (2, lanes)).astype(dtype)
    guarded = np.zeros(2 * lanes + 16, np.bool_)
    arrays = {"A": a, "B": b, "O": guarded[: 2 * lanes].reshape(2, lanes)}
    emu.emulate(kern, arrays, sources=sources)
    np.testing.assert_array_equal(arrays["O"], a < b)
    assert not guarded[2 * lanes :].any()
    _nvcc(sources.files["main.cu"], tmp_path)


def test_legal_widths_stay_one_vector(tmp_path: Path) -> None:
    kern = _vector_kernel(tmp_path, "int8", 16, "A[bx, i]", "int8")
    source = emu.lower_for_cuda(kern).files["main.cu"]
    assert "*(int4*)(O_ptr" in source
    assert "i_chunk" not in source
