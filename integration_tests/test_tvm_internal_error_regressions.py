"""Programs that used to stop inside TVM with an internal error, each now compiling and
computing what numpy does (issue 20 item 8): a boolean compared with ``0`` on ``llvm``,
a shared tile used at one constant index next to a copied tile on CUDA, a
``T.thread_binding`` loop on a launched thread index on CUDA, and (issue 24) float8
conversions of a value TVM folds to a constant, a bfloat16 clamp of an expanded
``exp2`` and a tile written up to a run-time bound on ``c``."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tl_ir.language as T
import tl_jit
from tl_backend_api import create_backend_context
from tl_backend_api.artifact import kernel_module, kernel_symbol

CPU_TARGETS = ("c", "llvm")


def _cuda_source(func: Any) -> str:
    context = create_backend_context({"kind": "cuda", "arch": "sm_80"}, execution_backend="source")
    sources = context.emit_source(context.lower(kernel_module(func, kernel_symbol(func))))
    (name,) = [f for f in sources.files if f.endswith(".cu")]
    return str(sources.files[name])


def _nvcc_compiles(source: str, directory: Path) -> None:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return
    path = directory / "kernel.cu"
    path.write_text(source)
    done = subprocess.run(
        [nvcc, "-cubin", "-arch=sm_80", "-o", str(path.with_suffix(".cubin")), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def mask_kernel(N: int) -> Any:
    @T.prim_func
    def main(
        Mask: T.Tensor((N,), "bool"),
        Other: T.Tensor((N,), "bool"),
        X: T.Tensor((N,), "float32"),
        Y: T.Tensor((N,), "float32"),
    ):
        with T.Kernel(1, threads=1) as _bx:
            for k in T.serial(N):
                value = X[k]
                if Mask[k] != 0:
                    value = value * 2
                if Mask[k] == 0:
                    value = value + 10
                if Mask[k] != Other[k]:
                    value = value + 100
                Y[k] = value

    return main


@pytest.mark.parametrize("target", CPU_TARGETS)
def test_a_bool_compared_with_zero_compiles_and_computes(target: str) -> None:
    kernel = tl_jit.compile(mask_kernel(64), out_idx=[3], target=target)
    rng = np.random.default_rng(1)
    mask, other = rng.integers(0, 2, 64).astype(bool), rng.integers(0, 2, 64).astype(bool)
    x = rng.standard_normal(64).astype(np.float32)
    want = np.where(mask, x * 2, x + 10) + np.where(mask != other, 100, 0)
    np.testing.assert_allclose(kernel(mask, other, x), want.astype(np.float32), rtol=1e-6)


def single_index_shared(elements: int) -> Any:
    @T.prim_func
    def main(A: T.Tensor((128, 32), "float32"), B: T.Tensor((128, 32), "float32")):
        with T.Kernel(1, threads=128) as _bx:
            tile = T.alloc_shared((128, 32), "float32")
            flag = T.alloc_shared((elements,), "float32")
            T.copy(A, tile)
            flag[0] = 1.0
            for i, j in T.Parallel(128, 32):
                B[i, j] = tile[i, j] + flag[0]

    return main


@pytest.mark.parametrize("elements", [1, 2, 4])
def test_a_shared_tile_used_at_one_index_lowers_for_cuda(elements: int, tmp_path: Path) -> None:
    source = _cuda_source(single_index_shared(elements))
    # It became a static one-element array; the copied tile stays in dynamic memory.
    assert "__shared__ alignas(64) float flag_ptr[1];" in source
    assert "extern __shared__" in source
    _nvcc_compiles(source, tmp_path)
    kernel = tl_jit.compile(single_index_shared(elements), out_idx=[1], target="c")
    a = np.arange(128 * 32, dtype=np.float32).reshape(128, 32)
    np.testing.assert_array_equal(kernel(a), a + 1)


def thread_binding_kernel(n: int) -> Any:
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as _bx:
            tx = T.thread_binding(0, n, thread="threadIdx.x")
            B[tx] = A[tx] + 1

    return main


@pytest.mark.parametrize("n", [64, 32])
def test_thread_binding_on_a_launched_index_lowers_for_cuda(n: int, tmp_path: Path) -> None:
    source = _cuda_source(thread_binding_kernel(n))
    body = source[source.index("__global__ void __launch_bounds__(64) main_kernel(float") :]
    assert "threadIdx.x" in body
    assert ("< 32" in body) == (n == 32)  # a shorter loop runs under tx < n
    _nvcc_compiles(source, tmp_path)
    kernel = tl_jit.compile(thread_binding_kernel(n), [], target="c")
    a = np.arange(64, dtype=np.float32)
    b = np.full(64, -1, dtype=np.float32)
    kernel(a, b)
    np.testing.assert_array_equal(b[:n], a[:n] + 1)
    np.testing.assert_array_equal(b[n:], -1)


def _gemm_with_unwritten_operand(clear: bool) -> Any:
    @T.prim_func
    def gemm_with_unwritten_operand(
        A: T.Tensor((32, 32), "float16"), C: T.Tensor((32, 32), "float32")
    ):
        with T.Kernel(1, threads=32):
            a_s = T.alloc_shared((32, 32), "float16")
            b_s = T.alloc_shared((32, 32), "float16")  # never written: reads as zero
            acc = T.alloc_fragment((32, 32), "float32")
            if clear:
                T.clear(acc)
            T.copy(A, a_s)
            T.gemm(a_s, b_s, acc)
            T.copy(acc, C)

    return gemm_with_unwritten_operand


@pytest.mark.parametrize("target", CPU_TARGETS)
def test_a_gemm_accumulator_written_only_by_the_gemm_compiles(target: str) -> None:
    """An accumulator the gemm alone writes (not cleared; TileLang issue 1719's
    layout_1) is written through its address: it is not a never-written tile whose
    loads read zero, which turned the gemm's ``address_of(acc[..])`` into
    ``address_of(0.0)`` and stopped TVM's C generator. Its values are unspecified
    (never initialized); a cleared one gives ``A @ 0``, the unwritten operand's zeros."""
    a = np.random.default_rng(0).standard_normal((32, 32)).astype(np.float16)
    uncleared = tl_jit.compile(_gemm_with_unwritten_operand(False), target=target, out_idx=[1])
    assert np.asarray(uncleared(a)).shape == (32, 32)
    cleared = tl_jit.compile(_gemm_with_unwritten_operand(True), target=target, out_idx=[1])
    np.testing.assert_array_equal(cleared(a), np.zeros((32, 32), np.float32))


@T.prim_func
def _float8_self_difference_to_uint16(
    X: T.Tensor((8,), "float8_e5m2"), Out: T.Tensor((8,), "float32")
):
    with T.Kernel(1, threads=1):
        for i in T.Parallel(8):
            Out[i] = T.cast(T.cast(X[i] - X[i], "uint16"), "float32")


def test_a_float8_conversion_of_a_folded_constant_compiles_on_c() -> None:
    # TVM folds X - X to 0, so the float8 encode and decode met constants: its canonical
    # simplifier rewrote a uint32 `code < 4` as `code - 4 < 0` and stopped ("Minuend").
    # (llvm still stops in TVM's vectorizer on this one: noted on the issue.)
    import ml_dtypes

    kernel = tl_jit.compile(_float8_self_difference_to_uint16, target="c")
    x = np.array([1, 2, np.inf, np.nan, -3, 0, 4, 5], np.float32).astype(ml_dtypes.float8_e5m2)
    out = np.full(8, 7.0, np.float32)
    kernel(x, out)
    np.testing.assert_array_equal(out, np.zeros(8, np.float32))


@T.prim_func
def _bfloat16_clamp_of_exp2(
    X: T.Tensor((8,), "bfloat16"), Y: T.Tensor((8,), "bfloat16"), Out: T.Tensor((8,), "bfloat16")
):
    with T.Kernel(1, threads=1):
        for i in T.Parallel(8):
            Out[i] = T.log2(T.clamp(T.exp2(T.tanh(X[i])), X[i], X[i] - Y[i]))


def test_a_bfloat16_clamp_of_an_expanded_exp2_compiles_on_c() -> None:
    # TVM's common-subexpression pass merged the rounding's copies of the expanded
    # exp2 and bound one variable twice ("Binding of variable exp_xc ... conflicts").
    # (llvm builds it, in about 85 s: the roundings copy their operands; noted.)
    import ml_dtypes

    kernel = tl_jit.compile(_bfloat16_clamp_of_exp2, target="c")
    x = np.linspace(-2, 2, 8).astype(ml_dtypes.bfloat16)
    y = np.ones(8, ml_dtypes.bfloat16)
    out = np.zeros(8, ml_dtypes.bfloat16)
    kernel(x, y, out)
    xf, yf = x.astype(np.float32), y.astype(np.float32)
    bf = ml_dtypes.bfloat16
    inner = np.exp2(np.tanh(xf).astype(bf).astype(np.float32)).astype(bf).astype(np.float32)
    low, high = xf, (xf - yf).astype(bf).astype(np.float32)
    clamped = np.minimum(np.maximum(inner, low), high)  # T.clamp: max with low, then min
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = np.log2(clamped).astype(bf).astype(np.float32)
    np.testing.assert_allclose(out.astype(np.float32), expected, rtol=1e-2, equal_nan=True)


@T.prim_func
def _tile_written_up_to_a_run_time_bound(A: T.Tensor((8,), "float32"), n: T.int32):
    with T.Kernel(1, threads=1):
        S = T.alloc_local((8,), "float32")
        for i in T.serial(n):
            if i < 8:
                S[i] = T.cast(i + 1, "float32")
        A[0] = S[0]


@pytest.mark.parametrize("target", CPU_TARGETS)
def test_a_tile_written_up_to_a_run_time_bound_compiles(target: str) -> None:
    # c: TVM's buffer compaction shrank S to max(min(n, 8), 1) elements and its C code
    # generator stopped ("Can only handle constant size stack allocation").
    kernel = tl_jit.compile(_tile_written_up_to_a_run_time_bound, target=target)
    out = np.zeros(8, np.float32)
    kernel(out, 5)
    assert out[0] == 1.0
