"""TileLang's atomic surface on the CPU targets and the reference interpreter: a scalar
onto a tile (``T.atomic_add(A[tile], 1.0)``), ``T.atomic_load`` / ``T.atomic_store``
with memory orders, unsigned and 64-bit atomics, ``T.atomic_or``; what cannot be done
is refused naming the op, what was expected and what came. The CUDA side:
tl-codegen-cuda/tests/test_atomics_porting_emulated.py runs the same kernels."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tl_ir.language as T
import tl_jit
from integration_tests.atomic_porting_kernels import CASES, load_store_flag
from tl_ir import interpret
from tl_ir.errors import KernelTypeError, UnsupportedError

TARGETS = ["c", "llvm"]


def _run(func: Any, arrays: dict[str, Any], target: str) -> dict[str, Any]:
    names = [param.name for param in func.params]
    if target == "interpret":
        interpret.run(func, [arrays[name] for name in names])
    else:
        tl_jit.compile(func, target=target)(*[arrays[name] for name in names])
    return arrays


@pytest.mark.parametrize("target", [*TARGETS, "interpret"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_atomic_kernels_compute_what_numpy_does(name: str, target: str) -> None:
    build, make_arrays, expected = CASES[name]
    arrays = make_arrays()
    wanted = expected({k: v.copy() for k, v in arrays.items()})
    _run(build(), arrays, target)
    for output, want in wanted.items():
        np.testing.assert_array_equal(arrays[output], want, err_msg=f"{name}: {output}")


@pytest.mark.parametrize("target", [*TARGETS, "interpret"])
def test_every_block_sees_its_own_add_through_an_atomic_load(target: str) -> None:
    arrays = {
        "Count": np.zeros(1, np.int64),
        "Seen": np.zeros(8, np.int64),
        "Flag": np.zeros(8, np.int32),
    }
    _run(load_store_flag(), arrays, target)
    assert arrays["Count"][0] == 8
    assert ((arrays["Seen"] >= 1) & (arrays["Seen"] <= 8)).all(), arrays["Seen"]
    np.testing.assert_array_equal(arrays["Flag"], np.arange(1, 9, dtype=np.int32))


def test_a_scalar_onto_a_tile_is_a_parallel_loop_of_element_atomics() -> None:
    text = CASES["tile_plus_scalar"][0]().script()
    assert text.count('"tl.loop_kind": "parallel"') == 2 and "tile_i1" in text


def test_atomic_load_is_a_fetching_atomic_and_store_a_statement() -> None:
    text = CASES["load_store"][0]().script()
    assert "T.atomic_load(" in text and "atomic_load_prev" in text
    assert "T.atomic_store(" in text


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint32", "uint64"])
@pytest.mark.parametrize("target", TARGETS)
def test_integer_atomics_of_every_width_under_contention(dtype: str, target: str) -> None:
    @T.prim_func
    def main(A: T.Tensor((512,), dtype), Out: T.Tensor((4,), dtype), P: T.Tensor((512,), dtype)):
        with T.Kernel(8, threads=64) as bx:
            for i in T.Parallel(64):
                T.atomic_add(Out[0], A[bx * 64 + i])
                T.atomic_max(Out[1], A[bx * 64 + i])
                T.atomic_min(Out[2], A[bx * 64 + i])
                P[bx * 64 + i] = T.atomic_add(Out[3], T.Cast(dtype, 1), return_prev=True)

    a = np.random.default_rng(5).integers(0, 2**20, 512).astype(dtype)
    out = np.array([0, 0, np.iinfo(dtype).max, 0], dtype)
    p = np.zeros(512, dtype)
    tl_jit.compile(main, target=target)(a, out, p)
    assert int(out[0]) == int(a.astype(object).sum())  # 512 values below 2**20: no wrap
    assert (out[1], out[2], out[3]) == (a.max(), a.min(), 512)
    np.testing.assert_array_equal(np.sort(p), np.arange(512, dtype=dtype))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64", "uint32"])
@pytest.mark.parametrize("target", TARGETS)
def test_load_and_store_of_each_width(dtype: str, target: str) -> None:
    @T.prim_func
    def main(A: T.Tensor((64,), dtype), B: T.Tensor((64,), dtype)):
        with T.Kernel(4, threads=16) as bx:
            for i in T.Parallel(16):
                T.atomic_store(B[bx * 16 + i], T.atomic_load(A[bx * 16 + i]))

    import ml_dtypes  # bfloat16 arrays

    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
    a = (np.arange(64) * 0.5 + 1).astype(np_dtype)
    b = np.zeros(64, np_dtype)
    tl_jit.compile(main, target=target)(a, b)
    np.testing.assert_array_equal(b, a)


def _load_order(order: str) -> Any:
    @T.prim_func
    def main(S: T.Tensor((1,), "int32"), Out: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=1) as _:
            Out[0] = T.atomic_load(S[0], memory_order=order)

    return main


def _store_order(order: str) -> Any:
    @T.prim_func
    def main(D: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=1) as _:
            T.atomic_store(D[0], 1, memory_order=order)

    return main


@pytest.mark.parametrize("order", ["relaxed", "consume", "acquire", "seq_cst"])
def test_atomic_load_takes_the_load_orders(order: str) -> None:
    s, out = np.array([41], np.int32), np.zeros(1, np.int32)
    tl_jit.compile(_load_order(order), target="c")(s, out)
    assert out[0] == 41


@pytest.mark.parametrize("order", ["release", "acq_rel", "invalid"])
def test_atomic_load_refuses_a_store_order(order: str) -> None:
    with pytest.raises(
        KernelTypeError,
        match=r"T.atomic_load\(memory_order=...\): expected one of relaxed, consume, acquire, seq_cst, got",
    ):
        _load_order(order)


@pytest.mark.parametrize("order", ["relaxed", "release", "seq_cst"])
def test_atomic_store_takes_the_store_orders(order: str) -> None:
    d = np.zeros(1, np.int32)
    tl_jit.compile(_store_order(order), target="c")(d)
    assert d[0] == 1


@pytest.mark.parametrize("order", ["consume", "acquire", "acq_rel", "invalid"])
def test_atomic_store_refuses_a_load_order(order: str) -> None:
    with pytest.raises(
        KernelTypeError,
        match=r"T.atomic_store\(memory_order=...\): expected one of relaxed, release, seq_cst, got",
    ):
        _store_order(order)


def test_atomic_or_refuses_a_float_buffer() -> None:
    with pytest.raises(
        KernelTypeError,
        match=r"T.atomic_or\(dst, value\): expected dst in an integer buffer .* got F of dtype float32",
    ):

        @T.prim_func
        def main(F: T.Tensor((1,), "float32")):
            with T.Kernel(1, threads=1) as _:
                T.atomic_or(F[0], 1)


def test_atomic_or_refuses_a_tile() -> None:
    with pytest.raises(
        UnsupportedError,
        match=r"T.atomic_or\(dst, value\): dst: expected one element .* got the tile A\(4\)",
    ):

        @T.prim_func
        def main(A: T.Tensor((4,), "int32")):
            with T.Kernel(1, threads=1) as _:
                T.atomic_or(A[0:4], 1)


def test_atomic_load_refuses_a_tile() -> None:
    with pytest.raises(UnsupportedError, match=r"T.atomic_load\(src\): src: expected one element"):

        @T.prim_func
        def main(A: T.Tensor((4,), "int32"), Out: T.Tensor((1,), "int32")):
            with T.Kernel(1, threads=1) as _:
                Out[0] = T.atomic_load(A[0:4])


def test_return_prev_onto_a_tile_is_refused() -> None:
    with pytest.raises(
        UnsupportedError,
        match=r"T.atomic_add\(return_prev=True\): only a scalar update of one element",
    ):

        @T.prim_func
        def main(A: T.Tensor((4,), "float32"), Out: T.Tensor((1,), "float32")):
            with T.Kernel(1, threads=1) as _:
                Out[0] = T.atomic_add(A[0:4], 1.0, return_prev=True)


@pytest.mark.parametrize("target", TARGETS)
def test_an_atomic_of_a_dtype_the_cpu_lacks_names_op_dtype_and_choices(target: str) -> None:
    @T.prim_func
    def main(A: T.Tensor((1,), "int8")):
        with T.Kernel(2, threads=1) as _:
            T.atomic_add(A[0], T.int8(1))

    with pytest.raises(
        ValueError,
        match=r"atomic_add on A: dtype int8 is not supported on the CPU; expected one of \['float32'.*'uint64'",
    ):
        tl_jit.compile(main, target=target)


def _sum64() -> Any:
    @T.prim_func
    def main(A: T.Tensor((32,), "float64"), Out: T.Tensor((1,), "float64")):
        with T.Kernel(1, threads=32) as _:
            for i in T.Parallel(32):
                T.atomic_add(Out[0], A[i])

    return main


def test_rocm_refuses_a_64_bit_atomic_add_naming_its_dtypes() -> None:
    # TVM's AMDGPU codegen stopped on an internal check ("Only supports 32 bit atomic").
    with pytest.raises(
        NotImplementedError,
        match=r"T.atomic_add on Out: dtype float64 is not supported on target 'rocm'; expected one of \['float32', 'int32', 'uint32'\]",
    ):
        tl_jit.lower(_sum64(), target="hip")


@pytest.mark.parametrize("target", ["hip", "metal", "webgpu"])
def test_gpu_backends_without_atomic_load_say_so(target: str) -> None:
    with pytest.raises(
        NotImplementedError,
        match=rf"T.atomic_load is not implemented on target '{'rocm' if target == 'hip' else target}'",
    ):
        tl_jit.lower(CASES["load_store"][0](), target=target)
