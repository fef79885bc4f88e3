"""TileLang's reducers: every contribution combined once, whatever the distribution."""

import numpy as np
import pytest

import tl_ir
import tl_ir.language as T
from tl_ir.interpret import run


def _row_reduce(op, init=None):
    @T.prim_func
    def main(A: T.Tensor((8, 16), "float32"), B: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32):
            acc = T.alloc_reducer((8,), "float32", op=op)
            out = T.alloc_fragment((8,), "float32")
            T.reducer_init(acc, init)
            for i, j in T.Parallel(8, 16):
                T.reducer_update(acc[i], A[i, j])
            T.finalize_reducer(acc, out)
            T.copy(out, B)

    return main


@pytest.mark.parametrize(
    ("op", "init", "expected"),
    [
        ("sum", None, lambda a: a.sum(1)),
        ("max", None, lambda a: a.max(1)),
        ("min", None, lambda a: a.min(1)),
        ("sum", 10.0, lambda a: a.sum(1) + 10),
    ],
)
def test_reducer_combines_every_contribution(op, init, expected):
    a = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)
    b = np.zeros(8, np.float32)
    run(_row_reduce(op, init), [a, b])
    np.testing.assert_allclose(b, expected(a), rtol=1e-5, atol=1e-5)


def test_bitwise_reducers_are_unsupported_errors():
    with pytest.raises(NotImplementedError, match="op='bitand'"):
        _row_reduce("bitand")


def _legacy_row_reduce(op, replication="all", fill=None, update=None):
    """TileLang's legacy form (its GEMV example): fill, plain read-modify-write stores in a
    T.Parallel loop, in-place finalize, then the reducer read as the result."""

    @T.prim_func
    def main(A: T.Tensor((8, 16), "float32"), B: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32):
            acc = T.alloc_reducer(8, "float32", op=op, replication=replication)
            if fill is None:
                T.clear(acc)
            else:
                T.fill(acc, fill)
            for i, j in T.Parallel(8, 16):
                if update is not None:
                    acc[i] = update(acc[i], A[i, j])
                elif op == "sum":
                    acc[i] += A[i, j]
                elif op == "max":
                    acc[i] = T.max(acc[i], A[i, j])
                else:
                    acc[i] = T.min(A[i, j], acc[i])
            T.finalize_reducer(acc)
            T.copy(acc, B)

    return main


@pytest.mark.parametrize(
    ("op", "fill", "expected"),
    [
        ("sum", None, lambda a: a.sum(1)),
        ("max", -1e30, lambda a: a.max(1)),
        ("max", 5.0, lambda a: np.maximum(a.max(1), 5.0)),  # a seed, as in TileLang
        ("min", 1e30, lambda a: a.min(1)),
    ],
)
@pytest.mark.parametrize("replication", ["all", "none"])
def test_the_legacy_reducer_combines_every_contribution(op, fill, expected, replication):
    a = np.random.default_rng(1).standard_normal((8, 16)).astype(np.float32)
    b = np.zeros(8, np.float32)
    kernel = _legacy_row_reduce(op, replication, fill)
    assert "T.atomic_" in str(kernel)  # each update store became an atomic update
    run(kernel, [a, b])
    np.testing.assert_allclose(b, expected(a), rtol=1e-5, atol=1e-5)


def test_the_legacy_reducer_refuses_what_tilelang_refuses():
    with pytest.raises(tl_ir.KernelTypeError, match=r"replication=.*expected one of all, none"):
        _legacy_row_reduce("sum", replication="some")
    with pytest.raises(tl_ir.KernelTypeError, match=r"filled with 1.*TileLang takes only 0"):
        _legacy_row_reduce("sum", fill=1.0)
    with pytest.raises(tl_ir.KernelTypeError, match=r"not its update acc\[i\] \+= v"):
        _legacy_row_reduce("sum", update=lambda old, value: old * value)
    with pytest.raises(tl_ir.KernelTypeError, match=r"op='max'.*not its update"):
        _legacy_row_reduce("max", fill=0.0, update=lambda old, value: old + value)


def _lifecycle(steps):
    """A kernel running the reducer steps named in ``steps`` in source order (each
    ``if`` on a Python value is decided when the kernel is parsed)."""

    @T.prim_func
    def kernel(A: T.Tensor((8,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=8):
            acc = T.alloc_reducer((1,), "float32", op="sum")
            result = T.alloc_fragment((1,), "float32")
            if "init" in steps[:1]:
                T.reducer_init(acc)
            if "clear" in steps[:1]:
                T.clear(acc)
            for i in T.Parallel(8):
                T.reducer_update(acc[0], A[i])
            if "init_again" in steps:
                T.reducer_init(acc)
            T.finalize_reducer(acc, result)
            if "update_after" in steps:
                for i in T.Parallel(8):
                    T.reducer_update(acc[0], A[i])
            B[0] = result[0]

    return kernel


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        (("update",), "used before T.reducer_init"),
        (("init", "init_again"), "initialised twice"),
        (("init", "update_after"), "after T.finalize_reducer closed it"),
        # TileLang's test_reject_clear_on_reducer: the first syntax's T.clear does not
        # open a reducer the second syntax updates.
        (("clear",), "after T.clear/T.fill started it in TileLang's first reducer syntax"),
    ],
)
def test_a_reducer_used_out_of_its_lifecycle_is_refused(steps, message):
    # TileLang's reducer_v2 diagnostics: an update before the init read whatever the
    # memory held (NaN on llvm, 8 on c).
    with pytest.raises(tl_ir.KernelTypeError, match=message):
        _lifecycle(steps)


def test_a_reducer_in_its_lifecycle_builds():
    a = np.ones(8, np.float32)
    b = np.zeros(1, np.float32)
    run(_lifecycle(("init",)), [a, b])
    assert b[0] == 8


@T.prim_func
def _first_syntax(A: T.Tensor((8,), "float32"), B: T.Tensor((1,), "float32")):
    with T.Kernel(1, threads=8):
        r = T.alloc_reducer((1,), "float32")
        T.clear(r)
        for i in T.Parallel(8):
            r[0] += A[i]
        T.finalize_reducer(r)
        B[0] = r[0]


def test_a_filled_reducer_is_open_as_in_tilelangs_first_syntax():
    """TileLang's first reducer syntax starts the reducer with ``T.clear`` (no
    ``T.reducer_init``) and finalizes in place (its
    test_finalize_reducer_default_alloc_v1_syntax); the lifecycle check refused it."""
    b = np.zeros(1, np.float32)
    run(_first_syntax, [np.arange(8, dtype=np.float32), b])
    assert b[0] == 28
