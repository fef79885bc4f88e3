"""``T.atomic_<kind>(dst, value, return_prev=True)``: an expression, ``dst``'s value
from just before this thread's update (TileLang's meaning), run by the reference
interpreter; the IR keeps the update a statement whose `AtomicOp.prev` receives it."""

import numpy as np
import pytest

import tl_ir.language as T
from tl_ir import ops, scopes
from tl_ir.interpret import run

N = 48
THREADS = 16


@T.prim_func
def compact(
    A: T.Tensor((N,), "float32"), Out: T.Tensor((N,), "int32"), Count: T.Tensor((1,), "int32")
):
    # Each thread owns one input element: the kept ones get consecutive slots.
    with T.Kernel(N // THREADS, threads=THREADS) as bx:
        tx = T.get_thread_binding()
        i = bx * THREADS + tx
        if A[i] > 0:
            pos = T.atomic_add(Count[0], 1, return_prev=True)
            Out[pos] = i


@T.prim_func
def running_max(
    A: T.Tensor((N,), "float32"), Seen: T.Tensor((N,), "float32"), M: T.Tensor((1,), "float32")
):
    # A thread that never reads its index still gets its own previous value.
    with T.Kernel(N, threads=1) as bx:
        Seen[bx] = T.atomic_max(M[0], A[bx], return_prev=True)


def test_the_ir_is_an_atomic_statement_and_a_load_of_its_prev_element():
    (op,) = [o for o in ops.tile_ops(compact) if isinstance(o, ops.AtomicOp)]
    assert op.kind == "add" and op.prev is not None
    assert str(op.prev.buffer.ty.storage_scope) == scopes.LOCAL_VAR
    assert ops.describe(ops.encode(op)) == op
    plain = ops.AtomicOp(kind="add", dst=op.dst, value=op.value)
    assert len(ops.encode(plain).args) == 2 and ops.describe(ops.encode(plain)).prev is None


def test_the_interpreter_hands_each_thread_the_value_before_its_update():
    a = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    out = np.full(N, -1, np.int32)
    count = np.zeros(1, np.int32)
    run(compact, [a, out, count])
    kept = np.flatnonzero(a > 0)
    assert count[0] == kept.size
    # Sequential threads take the slots in order; any order would be a permutation.
    np.testing.assert_array_equal(out[: kept.size], kept)


def test_a_fetching_max_returns_the_running_maximum_before_each_update():
    a = np.random.default_rng(1).standard_normal(N).astype(np.float32)
    seen = np.zeros(N, np.float32)
    m = np.full(1, -np.inf, np.float32)
    run(running_max, [a, seen, m])
    before = np.maximum.accumulate(np.concatenate([[-np.inf], a[:-1]])).astype(np.float32)
    np.testing.assert_array_equal(seen, before)
    assert m[0] == a.max()


def test_return_prev_outside_a_kernel_body_is_an_unsupported_error():
    from tl_ir.errors import UnsupportedError

    @T.prim_func
    def main(A: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1):
            A[0] = 1.0

    buffer = main.params[0]
    with pytest.raises(UnsupportedError, match=r"inside\s+a kernel body"):
        T.atomic_add(buffer[0], 1.0, return_prev=True)
