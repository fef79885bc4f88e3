"""tl_ir.eager: reading an eager function's declarations and building one specialization
into the classic front end's IR (no compile; tl-jit's tests run the kernels)."""

from __future__ import annotations

from typing import Any

import pytest

import tl_ir.language as T
from tl_ir import KernelSyntaxError
from tl_ir.eager import analyze, build_prim_func, evaluate_bindings


def gemm(A, B, dtype: T.dtype = T.float16, block_M: int = 64):
    M, N, K = T.const("M N K")
    A: T.Tensor[[M, K], dtype]
    B: T.Tensor[[K, N], dtype]
    C = T.empty((M, N), dtype)
    with T.Kernel(T.ceildiv(M, block_M), threads=1) as bx:
        for i, j in T.grid(block_M, N):
            C[bx * block_M + i, j] = A[bx * block_M + i, 0] * B[0, j]
    return C


def test_analyze_splits_kernel_and_template_parameters_and_finds_the_bindings() -> None:
    signature = analyze(gemm)
    assert [p.name for p in signature.kernel_params] == ["A", "B"]
    assert signature.template_params == ("dtype", "block_M")
    assert signature.consts == ("M", "N", "K")
    assert signature.bindings is not None
    assert [(b.symbol, b.param, b.where, b.axis) for b in signature.bindings] == [
        ("M", "A", "shape", 0),
        ("N", "B", "shape", 1),
        ("K", "A", "shape", 1),
    ]
    assert len(signature.prelude) == 1  # the T.const line; declarations are annotations


def test_build_gives_inputs_then_outputs_with_the_bound_sizes() -> None:
    signature = analyze(gemm)
    ir = build_prim_func(
        gemm, signature, {"dtype": "float16", "block_M": 8}, {"M": 16, "N": 4, "K": 2}
    )
    names = [str(p.name) for p in ir.prim_func.params]
    assert names == ["A", "B", "C"]
    assert ir.out_idx == (2,)
    assert [int(d) for d in ir.prim_func.params[2].ty.shape] == [16, 4]
    assert str(ir.prim_func.params[0].ty.dtype) == "float16"


def shaped(A, transpose: bool = False):
    M, N = T.const("M N")
    shape = [N, M] if transpose else [M, N]
    A: T.Tensor[shape, T.float32]
    with T.Kernel(1, threads=1) as _:
        A[0, 0] = 1.0


def test_bindings_of_a_non_literal_shape_come_from_evaluating_the_declarations() -> None:
    signature = analyze(shaped)
    assert signature.bindings is None
    assert evaluate_bindings(shaped, signature, {"transpose": True}) == {
        "N": ("A", "shape", 0),
        "M": ("A", "shape", 1),
    }


def declared_late(A):
    with T.Kernel(1, threads=1) as _:
        pass
    A: T.Tensor[[4], T.float32]


def test_a_declaration_after_the_kernel_body_is_refused() -> None:
    with pytest.raises(KernelSyntaxError, match="must come before the kernel body"):
        analyze(declared_late)


@T.macro
def scaled(x: Any, factor: Any) -> Any:
    (n,) = x.shape
    total = x[0] * factor + n
    return total


def test_a_macro_returns_a_value_into_a_classic_kernel() -> None:
    @T.prim_func
    def main(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=1) as _:
            B[0] = scaled(A, 2.0)

    script = main.script()
    # n = 8 was a compile-time value (no kernel variable); the macro's value was stored.
    assert "A[0] * T.float32(2.0) + T.float32(8.0)" in script
    assert "B[0] = total" in script


factor = 100.0  # a module global named like the macro's parameter below


@T.macro
def scaled_by(x: Any, factor: Any) -> Any:
    return x[0] * factor


def test_a_macro_parameter_shadows_a_module_global_of_the_same_name() -> None:
    # As in Python, the argument wins; the parser used to refuse the name as bound twice
    # ("Variable factor already defined") when the two values differed.
    @T.prim_func
    def main(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=1) as _:
            B[0] = scaled_by(A, 2.0)

    assert "A[0] * T.float32(2.0)" in main.script()


def tries(A):
    A: T.Tensor[[4], T.float32]
    with T.Kernel(1, threads=1) as _:
        try:  # noqa: SIM105 - the statement under test
            A[0] = 1.0
        except ValueError:
            pass


def test_try_in_an_eager_body_is_refused_at_its_line() -> None:
    with pytest.raises(KernelSyntaxError, match="try/except is not supported") as info:
        build_prim_func(tries, analyze(tries), {}, {})
    assert info.value.lineno == tries.__code__.co_firstlineno + 3
