"""Issue 20 item 7, the front end's part: Python values as ``if`` conditions, size
constants under an alias, ``T.Layout(shape, fn)`` (no compile; tl-jit's
test_eager_tilelang_forms runs the eager forms)."""

from __future__ import annotations

from typing import Any

import pytest

import tl_ir.language as T
from tl_ir.eager import analyze, evaluate_bindings
from tl_ir.errors import KernelTypeError, UnsupportedError


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


def make_dq_layout(dQ: Any) -> Any:
    """Flash attention backward's layout of dQ (TileLang's example, verbatim)."""
    return T.Layout(dQ.shape, lambda b, l, h, d: [b, l // 8, h, d // 8, (d % 2), 4 * (l % 8) + (d % 8) // 2])  # fmt: skip # noqa: E741


def test_t_layout_answers_as_tilelangs_layout_does() -> None:
    layout = T.Layout([2, 16, 1, 16], lambda b, l, h, d: [b, l // 8, h, d // 8, (d % 2), 4 * (l % 8) + (d % 8) // 2])  # fmt: skip # noqa: E741
    assert layout.get_input_shape() == [2, 16, 1, 16]
    assert layout.get_output_shape() == [2, 2, 1, 2, 2, 32]
    assert [int(i) for i in layout(1, 9, 0, 5)] == [1, 1, 0, 0, 1, 6]
    assert len(layout.get_forward_vars()) == 4 and len(layout.index) == 6
    assert T.Layout([4, 4], lambda i, j: (j, i)).get_output_shape() == [4, 4]
    with pytest.raises(KernelTypeError, match="index_fn could not be applied to 2"):
        T.Layout([4, 4], lambda i: i)
    with pytest.raises(KernelTypeError, match="shape"):
        T.Layout("4x4", lambda i, j: (j, i))


def test_t_layout_on_a_global_buffer_is_recorded_as_a_hint() -> None:
    @T.prim_func
    def post(dQ: T.Tensor((2, 16, 1, 16), "float32"), out: T.Tensor((2, 16, 1, 16), "float32")):
        with T.Kernel(2, threads=16) as bz:
            T.annotate_layout({dQ: make_dq_layout(dQ)})
            T.copy(dQ[bz, :, :, :], out[bz, :, :, :])

    recorded = post.attrs["tl.layout_map"]["dQ"]
    assert len(recorded.final_indices) == 6


def test_t_layout_on_a_fragment_says_what_to_write_instead() -> None:
    with pytest.raises(UnsupportedError, match=r"lambda i, j: \(thread, local_index\)"):

        @T.prim_func
        def main(A: T.Tensor((4, 4), "float32")):
            with T.Kernel(1, threads=4) as _bx:
                f = T.alloc_fragment((4, 4), "float32")
                T.annotate_layout({f: T.Layout([4, 4], lambda i, j: (j, i))})
                T.copy(A, f)


def test_t_layout_of_another_shape_is_refused() -> None:
    with pytest.raises(KernelTypeError, match=r"made for shape \[8, 8\]"):

        @T.prim_func
        def main(A: T.Tensor((4, 4), "float32")):
            with T.Kernel(1, threads=4) as _bx:
                s = T.alloc_shared((4, 4), "float32")
                T.annotate_layout({s: T.Layout([8, 8], lambda i, j: (j, i))})
                T.copy(A, s)


_TABLE = [1.0, 2.0, 3.0, 4.0]


def test_a_python_list_indexed_by_a_constant_is_read_while_parsing() -> None:
    @T.prim_func
    def main(A: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=4) as _bx:
            for i in T.Parallel(4):
                A[i] = A[i] * _TABLE[2]

    assert "T.float32(3.0)" in str(main)


def test_a_python_list_indexed_by_a_kernel_value_says_what_to_write_instead() -> None:
    with pytest.raises(KernelTypeError, match=r"store the values in a tile \(T.alloc_local\)"):

        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=4) as _bx:
                for i in T.Parallel(4):
                    A[i] = _TABLE[i]
