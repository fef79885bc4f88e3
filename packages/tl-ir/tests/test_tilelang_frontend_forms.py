"""Issue 20 item 7, the front end's part: Python values as ``if`` conditions, size
constants under an alias, ``T.Layout(shape, fn)`` (no compile; tl-jit's
test_eager_tilelang_forms runs the eager forms)."""

from __future__ import annotations

from typing import Any

import pytest

import tl_ir.language as T
from tl_ir.eager import analyze, evaluate_bindings
from tl_ir.errors import KernelTypeError


def _branching_kernel(flag: Any) -> Any:
    @T.prim_func
    def main(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=8) as _bx:
            for i in T.Parallel(8):
                if flag:
                    B[i] = A[i] + 1
                else:
                    B[i] = A[i] * 3

    return main


@pytest.mark.parametrize(("flag", "then"), [(None, False), (0, False), (2, True), ([1], True)])
def test_an_if_on_a_python_value_is_resolved_by_its_truth_while_parsing(
    flag: Any, then: bool
) -> None:
    text = str(_branching_kernel(flag))
    assert ("A[i] + T.float32(1" in text) is then
    assert ("A[i] * T.float32(3" in text) is not then
    assert "if " not in text


def test_an_if_on_a_kernel_expression_stays_a_run_time_branch() -> None:
    @T.prim_func
    def main(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=8) as _bx:
            for i in T.Parallel(8):
                if A[i] > 0:
                    B[i] = A[i]

    assert "if A[i] > T.float32(0" in str(main)


def test_a_tensor_as_an_if_condition_says_to_compare_an_element() -> None:
    with pytest.raises(KernelTypeError, match=r"compare one of its elements"):

        @T.prim_func
        def main(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=8) as _bx:
                if A:
                    B[0] = 1.0


def aliased(data, kernel):
    N, K = T.const("N, K")
    KH, KW = K, K
    data: T.Tensor((N,), T.float32)
    kernel: T.Tensor((KH, KW), T.float32)
    with T.Kernel(1, threads=1) as _:
        data[0] = kernel[0, 0]


def test_a_size_constant_under_an_alias_is_found_by_evaluating_the_prelude() -> None:
    signature = analyze(aliased)
    assert signature.bindings is None  # `KH` names K only after the prelude runs
    assert evaluate_bindings(aliased, signature, {}) == {
        "N": ("data", "shape", 0),
        "K": ("kernel", "shape", 0),
    }
