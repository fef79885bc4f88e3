"""`cpu-mark-independent-loops`: ``#pragma GCC ivdep`` only on vector loops proven free of
loop-carried dependence, and the kernels that get it still compute the right thing."""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm import tirx

import tl_jit
import tl_jit.language as T
from tl_codegen_cpu.c_patches import insert_ivdep_pragmas
from tl_codegen_cpu.passes import INDEPENDENT_LOOP_MARKER
from tl_codegen_cpu.passes.mark_independent_loops import (
    iterations_are_independent,
    mark_independent_vector_loops,
)

I = tirx.Var("i", "int32")  # noqa: E741 - the loop index, as in the kernels
A = tirx.decl_buffer((64,), "float32", name="A")
B = tirx.decl_buffer((64,), "float32", name="B")
C = tirx.decl_buffer((64,), "float32", name="C")
PARAMS = [A, B, C]


def _loop(body: tirx.Stmt, kind: tirx.ForKind = tirx.ForKind.VECTORIZED) -> tirx.For:
    return tirx.For(I, 0, 32, kind, body)


def _load(buf: tirx.Var, index: tirx.PrimExpr) -> tirx.PrimExpr:
    return tirx.BufferLoad(buf, [index])


def test_elementwise_loop_is_independent() -> None:
    body = tirx.BufferStore(C, _load(A, I) + _load(B, I), [I])
    assert iterations_are_independent(_loop(body), PARAMS)
    marked = mark_independent_vector_loops(_loop(body), INDEPENDENT_LOOP_MARKER, PARAMS)
    assert INDEPENDENT_LOOP_MARKER in marked.script()


def test_in_place_update_at_the_same_index_is_independent() -> None:
    body = tirx.BufferStore(A, _load(A, I * 2) * tirx.const(2.0, "float32"), [I * 2])
    assert iterations_are_independent(_loop(body), PARAMS)


@pytest.mark.parametrize(
    "body",
    [
        # reads an element another iteration writes
        tirx.BufferStore(A, _load(A, I + 1), [I]),
        # every iteration writes the same element
        tirx.BufferStore(C, _load(A, I), [tirx.const(0, "int32")]),
        # an index not linear in the loop variable
        tirx.BufferStore(C, _load(A, I), [tirx.floordiv(I, 2)]),
        # two stores into one buffer at different indices
        tirx.SeqStmt(
            [tirx.BufferStore(C, _load(A, I), [I]), tirx.BufferStore(C, _load(B, I), [I + 32])]
        ),
        # a call that may touch memory
        tirx.Evaluate(tirx.call_extern("int32", "tl_atomic_add_float32", C.data, _load(A, I))),
        # pairs that overlap the next iteration's (offsets span the stride)
        tirx.SeqStmt(
            [
                tirx.BufferStore(C, _load(A, I), [I * 2]),
                tirx.BufferStore(C, _load(B, I), [I * 2 + 2]),
            ]
        ),
        # a pair whose second element is read at the first's index
        tirx.SeqStmt(
            [
                tirx.BufferStore(C, _load(A, I), [I * 2]),
                tirx.BufferStore(C, _load(C, I * 2 + 2), [I * 2 + 1]),
            ]
        ),
    ],
    ids=[
        "reads-neighbour",
        "same-element",
        "nonlinear",
        "two-stores",
        "extern-call",
        "overlapping-pairs",
        "pair-reads-neighbour",
    ],
)
def test_loops_with_possible_dependence_are_not_marked(body: tirx.Stmt) -> None:
    assert not iterations_are_independent(_loop(body), PARAMS)
    assert (
        INDEPENDENT_LOOP_MARKER
        not in mark_independent_vector_loops(_loop(body), "M", PARAMS).script()
    )


def test_a_loop_over_pairs_owning_both_elements_is_independent() -> None:
    """Iteration i stores (and reads) C[2i] and C[2i + 1] only (`thread_lane_pairs`)."""
    body = tirx.SeqStmt(
        [
            tirx.BufferStore(C, _load(C, I * 2) + _load(A, I), [I * 2]),
            tirx.BufferStore(C, _load(C, I * 2 + 1) + _load(B, I), [I * 2 + 1]),
        ]
    )
    assert iterations_are_independent(_loop(body), PARAMS)


def test_only_vectorized_loops_are_marked() -> None:
    body = tirx.BufferStore(C, _load(A, I), [I])
    serial = mark_independent_vector_loops(_loop(body, tirx.ForKind.SERIAL), "MARK", PARAMS)
    assert "MARK" not in serial.script()


def test_a_view_of_another_buffer_is_not_trusted() -> None:
    view = tirx.decl_buffer((64,), "float32", name="A_view")  # not a parameter
    body = tirx.BufferStore(C, _load(view, I), [I])
    assert iterations_are_independent(_loop(body), [*PARAMS, view])
    assert not iterations_are_independent(_loop(body), PARAMS)


def test_marker_becomes_ivdep_and_leftovers_vanish() -> None:
    source = (
        f"TVM_DLL int32_t {INDEPENDENT_LOOP_MARKER}();\n"
        f"  {INDEPENDENT_LOOP_MARKER}();\n  for (int i = 0; i < 4; ++i) {{ }}\n"
        f"  {INDEPENDENT_LOOP_MARKER}();\n  x = 1;\n"
    )
    rewritten, count = insert_ivdep_pragmas(source)
    assert count == 1
    assert "#pragma GCC ivdep\n  for (int i" in rewritten
    assert INDEPENDENT_LOOP_MARKER not in rewritten


@tl_jit.jit(out_idx=[-1], target="c")
def _staged_add(M: int, N: int, block: int = 32) -> tvm.tirx.PrimFunc:
    @T.prim_func
    def add(
        A: T.Tensor((M, N), "float32"),
        B: T.Tensor((M, N), "float32"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=128) as (bx, by):
            A_s = T.alloc_shared((block, block), "float32")
            B_s = T.alloc_shared((block, block), "float32")
            C_l = T.alloc_fragment((block, block), "float32")
            T.copy(A[by * block, bx * block], A_s)
            T.copy(B[by * block, bx * block], B_s)
            for y, x in T.Parallel(block, block):
                C_l[y, x] = A_s[y, x] + B_s[y, x]
            T.copy(C_l, C[by * block, bx * block])

    return add


@pytest.mark.parametrize("shape", [(64, 96), (50, 70)])
def test_staged_elementwise_kernel_gets_ivdep_and_stays_correct(shape: tuple[int, int]) -> None:
    kernel = _staged_add(*shape)
    assert "#pragma GCC ivdep" in kernel.get_kernel_source()
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape, dtype=np.float32)
    b = rng.standard_normal(shape, dtype=np.float32)
    np.testing.assert_array_equal(kernel(a, b), a + b)
