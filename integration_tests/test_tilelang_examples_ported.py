"""Spellings found by porting TileLang's example programs (imports changed only).

* ``kernel.get_profiler(tensor_supply_type=tilelang.TensorSupplyType.Normal)``: TileLang's
  examples (flash decoding, persistent GEMM, convolution autotuning...) choose the kind of
  generated inputs this way, and their reference functions use torch methods
  (``Q.size(-1)``), as TileLang's supplied inputs are torch tensors.
* ``T.Tensor(shape, T.int4)`` (TileLang's int4 GEMM example): a TileLang dtype this
  language lacks is refused as not supported (a ``NotImplementedError``), not as a dtype
  that does not exist. (This module has no ``from __future__ import annotations``: the
  example's parameter annotations are evaluated as TileLang evaluates them.)
"""

import numpy as np
import pytest

import tl_ir
import tl_jit as tilelang
import tl_jit.language as T
from tl_jit.tensor_supply import TensorSupplyType, supplied_values


@tilelang.jit(out_idx=[1], target="c")
def _scale_rows(M, N):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, 8), threads=32) as bx:
            tile = T.alloc_fragment((8, N), "float32")
            T.copy(A[bx * 8, 0], tile)
            for i, j in T.Parallel(8, N):
                tile[i, j] = tile[i, j] * 2.0
            T.copy(tile, B[bx * 8, 0])

    return main


@pytest.fixture(scope="module")
def scale_rows():
    return _scale_rows(16, 32)


def test_tensor_supply_type_is_tilelangs_enum() -> None:
    assert tilelang.TensorSupplyType is TensorSupplyType
    names = ["Integer", "Uniform", "Normal", "Randn", "Zero", "One", "Auto"]
    assert [member.name for member in TensorSupplyType] == names
    assert [member.value for member in TensorSupplyType] == list(range(1, 8))


@pytest.mark.parametrize(
    ("kind", "check"),
    [
        (TensorSupplyType.Zero, lambda a: (a == 0).all()),
        (TensorSupplyType.One, lambda a: (a == 1).all()),
        (TensorSupplyType.Integer, lambda a: set(np.unique(a)) <= {-2, -1, 0, 1, 2}),
        (TensorSupplyType.Auto, lambda a: (a >= -1).all() and (a < 1).all() and a.std() > 0.3),
        (TensorSupplyType.Uniform, lambda a: (a >= -1).all() and (a < 1).all()),
        (TensorSupplyType.Normal, lambda a: abs(a.mean() + 1) < 0.2),
        (TensorSupplyType.Randn, lambda a: abs(a.mean()) < 0.2 and abs(a.std() - 1) < 0.2),
    ],
)
def test_profiler_draws_the_supply_kind(scale_rows, kind, check) -> None:
    profiler = scale_rows.get_profiler(tensor_supply_type=kind)
    (a,) = profiler.make_inputs()
    values = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    assert values.shape == (16, 32)
    assert str(values.dtype) == "float32"
    assert check(values), (kind, values[:2])


def test_supply_values_follow_the_dtype() -> None:
    rng = np.random.default_rng(0)
    assert set(np.unique(supplied_values(TensorSupplyType.Auto, (64,), "uint8", rng))) <= {0, 1, 2}
    assert (supplied_values(TensorSupplyType.Normal, (8,), "int8", rng) == 1).all()
    flags = supplied_values(TensorSupplyType.Integer, (64,), "bool", rng)
    assert flags.dtype == np.bool_


def test_profiler_supply_by_name_and_refusals(scale_rows) -> None:
    assert scale_rows.get_profiler(tensor_supply_type="Randn").tensor_supply_type is (
        TensorSupplyType.Randn
    )
    with pytest.raises(ValueError, match="tensor_supply_type"):
        scale_rows.get_profiler(tensor_supply_type="Gaussian")
    with pytest.raises(TypeError, match="tensor_supply_type"):
        scale_rows.get_profiler(tensor_supply_type=3)


def test_supplied_inputs_are_torch_tensors_for_torch_references(scale_rows) -> None:
    torch = pytest.importorskip("torch")
    profiler = scale_rows.get_profiler(tensor_supply_type=tilelang.TensorSupplyType.Normal)
    (a,) = profiler.make_inputs()
    assert isinstance(a, torch.Tensor) and a.device.type == "cpu"

    def ref_program(x):  # a TileLang example's reference: torch methods
        assert x.size(-1) == 32
        return x.mul(2.0)

    profiler.assert_allclose(ref_program, rtol=1e-6, atol=1e-6)


def test_profiler_without_supply_keeps_numpy_inputs(scale_rows) -> None:
    (a,) = scale_rows.get_profiler().make_inputs()
    assert isinstance(a, np.ndarray)


@pytest.mark.parametrize("dtype", ["int4", "float16x2", "float4_e2m1fn", "int8x4"])
def test_tilelang_dtype_lacking_here_is_not_supported(dtype) -> None:
    with pytest.raises(tl_ir.UnsupportedDtypeError, match=f"'{dtype}' is a TileLang dtype"):
        tl_ir.normalize_dtype(T.int4 if dtype == "int4" else dtype)
    # The T.<name> object too (it gave a plain UnknownDtypeError naming its repr).
    with pytest.raises(tl_ir.UnsupportedDtypeError, match=f"'{dtype}' is a TileLang dtype"):
        tl_ir.normalize_dtype(getattr(T, dtype))
    err = tl_ir.UnsupportedDtypeError
    assert issubclass(err, NotImplementedError) and issubclass(err, tl_ir.UnknownDtypeError)


def test_int4_gemm_example_is_refused_as_not_supported() -> None:
    def matmul_nt_int4(M, N, K, block_M, block_N, block_K):
        @T.prim_func
        def main(
            A: T.Tensor((M, K), T.int4),
            B: T.Tensor((N, K), T.int4),
            C: T.Tensor((M, N), T.int32),
        ):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
                A_shared = T.alloc_shared((block_M, block_K), T.int4)
                B_shared = T.alloc_shared((block_N, block_K), T.int4)
                C_local = T.alloc_fragment((block_M, block_N), T.int32)
                T.clear(C_local)
                for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                    T.copy(A[by * block_M, ko * block_K], A_shared)
                    T.copy(B[bx * block_N, ko * block_K], B_shared)
                    T.gemm(A_shared, B_shared, C_local, transpose_B=True)
                T.copy(C_local, C[by * block_M, bx * block_N])

        return main

    with pytest.raises(NotImplementedError, match="'int4' is a TileLang dtype"):
        matmul_nt_int4(64, 64, 128, 32, 32, 64)


def test_unknown_dtype_still_does_not_exist() -> None:
    with pytest.raises(tl_ir.UnknownDtypeError, match="'float17' does not exist") as info:
        tl_ir.normalize_dtype("float17")
    assert not isinstance(info.value, NotImplementedError)


# A TileLang example's module imports torch and its reference uses torch methods
# (TileLang's rms_norm: ``A.pow(2).mean(dim=1, keepdim=True)``), with no supply kind.
_TORCH_REFERENCE_MODULE = """
import torch

def ref_program(x):
    return x.pow(2).mul(0.5) if x.size(-1) == 32 else None

def numpy_like(x):
    return x * x * 0.5
"""


def _square_half(M, N):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, 8), threads=32) as bx:
            tile = T.alloc_fragment((8, N), "float32")
            T.copy(A[bx * 8, 0], tile)
            for i, j in T.Parallel(8, N):
                tile[i, j] = tile[i, j] * tile[i, j] * 0.5
            T.copy(tile, B[bx * 8, 0])

    return main


def test_torch_reference_gets_torch_tensors_without_a_supply_kind() -> None:
    torch = pytest.importorskip("torch")
    namespace: dict = {}
    exec(_TORCH_REFERENCE_MODULE, namespace)  # a stand-in example module
    kernel = tilelang.compile(_square_half(16, 32), out_idx=[1], target="c")
    profiler = kernel.get_profiler()
    (a,) = profiler.make_inputs()
    assert isinstance(a, np.ndarray)  # the profiler's own inputs stay numpy
    profiler.assert_allclose(namespace["ref_program"], rtol=1e-6, atol=1e-6)
    # A reference from a module without torch still gets numpy arrays.
    seen = []

    def numpy_reference(x):
        seen.append(type(x))
        return x * x * 0.5

    profiler.assert_allclose(numpy_reference, rtol=1e-6, atol=1e-6)
    assert seen == [np.ndarray]
    # TileLang's keyword for given inputs.
    given = torch.ones(16, 32)
    profiler.assert_allclose(namespace["ref_program"], input_tensors=[given], atol=1e-6)


def test_assert_allclose_allows_the_given_share_of_mismatches(scale_rows) -> None:
    profiler = scale_rows.get_profiler()

    def one_off(x):
        expected = x * 2.0
        expected.reshape(-1)[:3] += 1.0  # 3 of 512 elements wrong
        return expected

    with pytest.raises(AssertionError, match=r"3 of 512 elements differ .*first at index \[0, 0\]"):
        profiler.assert_allclose(one_off)
    profiler.assert_allclose(one_off, max_mismatched_ratio=0.01)
    with pytest.raises(AssertionError, match="allowed: 2"):
        profiler.assert_allclose(one_off, max_mismatched_ratio=0.005)
    with pytest.raises(ValueError, match="max_mismatched_ratio"):
        profiler.assert_allclose(one_off, max_mismatched_ratio=2)


def test_tilelang_utils_tensor_names() -> None:
    torch = pytest.importorskip("torch")
    from tl_jit.utils.tensor import TensorSupplyType as Supply
    from tl_jit.utils.tensor import get_tensor_supply, torch_assert_close

    assert Supply is TensorSupplyType
    kernel = tilelang.compile(_square_half(16, 32), out_idx=[1], target="c")
    supply = get_tensor_supply(Supply.Auto)
    torch.manual_seed(7)
    first = supply(kernel.params[0])
    torch.manual_seed(7)
    assert torch.equal(first, supply(kernel.params[0]))
    assert first.dtype == torch.float32 and tuple(first.shape) == (16, 32)
    assert float(first.abs().max()) <= 1.0
    assert torch_assert_close(kernel(first), first * first * 0.5, rtol=1e-6, atol=1e-6)
    wrong = first * first * 0.5
    wrong[0, 0] += 1
    torch_assert_close(kernel(first), wrong, max_mismatched_ratio=0.01)
    with pytest.raises(AssertionError, match="1 of 512 elements differ"):
        torch_assert_close(kernel(first), wrong, max_mismatched_ratio=0.001)
    with pytest.raises(AssertionError, match="dtype"):
        torch_assert_close(first, first.double())

    class Symbolic:
        name, shape, dtype = "A", ("M", 4), "float32"

    with pytest.raises(ValueError, match=r"param 'A': expected a static shape.*'M'"):
        supply(Symbolic())


def test_second_sweep_porting_names(scale_rows) -> None:
    """Names TileLang's examples use (second sweep): ``T.dynamic("n, m")`` gives a tuple,
    ``get_profiler(TensorSupplyType.Integer)`` takes the kind first, ``run_once``,
    ``do_bench(ref_program)`` with a torch reference, ``compile_flags=``,
    ``tilelang.DataType`` and ``tilelang.testing`` without its own import."""
    torch = pytest.importorskip("torch")
    n, m = T.dynamic("n, m")
    assert (str(n), str(m)) == ("n", "m")
    assert [str(v) for v in T.dynamic("a b c")] == ["a", "b", "c"]
    with pytest.raises(tl_ir.KernelTypeError, match="several separated by commas"):
        T.dynamic("a, 2b")
    profiler = scale_rows.get_profiler(TensorSupplyType.Integer)
    assert profiler.tensor_supply_type is TensorSupplyType.Integer
    with pytest.raises(TypeError, match="supply kind is given twice"):
        scale_rows.get_profiler(TensorSupplyType.Integer, tensor_supply_type="Zero")
    (a,) = profiler.inputs
    np.testing.assert_array_equal(np.asarray(profiler.run_once()), np.asarray(a) * 2)
    namespace: dict = {}
    exec(_TORCH_REFERENCE_MODULE, namespace)  # a stand-in example module using torch
    assert torch.equal(profiler.run_once(namespace["ref_program"]), torch.as_tensor(a).pow(2) / 2)
    assert scale_rows.get_profiler().do_bench(namespace["ref_program"], warmup=1, rep=2) > 0
    assert tilelang.DataType("float16").bits == 16
    assert tilelang.testing.torch_assert_close is not None

    @tilelang.jit(out_idx=[1], target="c", compile_flags=["-O3", "--use_fast_math"])
    def flagged(M):
        return _square_half(M, 32)

    assert flagged(16) is not None
    with pytest.raises(TypeError, match="compile_flags: expected None, a string or a list"):
        tilelang.jit(out_idx=[1], compile_flags=3)
    with pytest.raises(TypeError, match="compile_flags"):
        tilelang.compile(_square_half(16, 32), out_idx=[1], target="c", compile_flags=[1])
