"""copy / fill / reduce / cumsum emitters against numpy, partial tiles included."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_passes_testing import run_on_host
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tvm import tirx

from tl_codegen_cpu.lowering import (
    REDUCE_KINDS,
    TileRegion,
    emit_tile_copy,
    emit_tile_cumsum,
    emit_tile_fill,
    emit_tile_reduce,
)


def _func(params: list[object], body: tirx.Stmt) -> tirx.PrimFunc:
    return tirx.PrimFunc(params, body).with_attrs({"global_symbol": "main", "tir.noalias": True})


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.integers(1, 9),
    cols=st.integers(1, 40),
    row0=st.integers(0, 9),
    col0=st.integers(0, 40),
)
def test_copy_partial_tile_skips_out_of_bounds(rows: int, cols: int, row0: int, col0: int) -> None:
    # src is 10 x 41; the tile anchored at (row0, col0) may hang over its edge.
    src = tirx.decl_buffer((10, 41), "float32", name="S")
    dst = tirx.decl_buffer((rows, cols), "float32", name="D")
    body = emit_tile_copy(TileRegion(src, (row0, col0), (rows, cols)), TileRegion.whole(dst))
    s = np.arange(410, dtype=np.float32).reshape(10, 41)
    d0 = np.full((rows, cols), -1, np.float32)
    _, d = run_on_host(_func([src, dst], body), s, d0)
    expected = d0.copy()
    part = s[row0 : row0 + rows, col0 : col0 + cols]
    expected[: part.shape[0], : part.shape[1]] = part
    np.testing.assert_array_equal(d, expected)


def test_copy_with_dynamic_offset_and_cast() -> None:
    n = tirx.Var("n", "int32")
    src = tirx.decl_buffer((6, 8), "float32", name="S")
    dst = tirx.decl_buffer((12, 8), "float16", name="D")
    # Copy a [1, 8] row into row n of dst (unit dims are ignored when matching).
    body = emit_tile_copy(TileRegion(src, (2, 0), (1, 8)), TileRegion(dst, (n, 0), (1, 8)))
    func = _func([n, src, dst], body)
    import tvm

    from tl_codegen_cpu.lowering import host_cpu_name

    lib = tvm.compile(func, target=tvm.target.Target({"kind": "llvm", "mcpu": host_cpu_name()}))
    s = np.arange(48, dtype=np.float32).reshape(6, 8)
    d = tvm.runtime.tensor(np.zeros((12, 8), np.float16))
    lib["main"](5, tvm.runtime.tensor(s), d)
    lib["main"](40, tvm.runtime.tensor(s), d)  # out of bounds: nothing written
    expected = np.zeros((12, 8), np.float16)
    expected[5] = s[2]
    np.testing.assert_array_equal(d.numpy(), expected)


def test_fill_clips_to_the_buffer() -> None:
    dst = tirx.decl_buffer((5, 7), "int32", name="D")
    body = emit_tile_fill(TileRegion(dst, (3, 4), (4, 4)), 9)
    (d,) = run_on_host(_func([dst], body), np.zeros((5, 7), np.int32))
    expected = np.zeros((5, 7), np.int32)
    expected[3:, 4:] = 9
    np.testing.assert_array_equal(d, expected)


_NUMPY_REDUCE = {
    "sum": lambda x, axis: x.sum(axis=axis),
    "max": lambda x, axis: x.max(axis=axis),
    "min": lambda x, axis: x.min(axis=axis),
    "abssum": lambda x, axis: np.abs(x).sum(axis=axis),
    "absmax": lambda x, axis: np.abs(x).max(axis=axis),
}
_NUMPY_FOLD = {
    "sum": np.add,
    "abssum": np.add,
    "max": np.maximum,
    "absmax": np.maximum,
    "min": np.minimum,
}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    shape=st.lists(st.integers(1, 9), min_size=1, max_size=3),
    data=st.data(),
    kind=st.sampled_from(REDUCE_KINDS),
    clear=st.booleans(),
    lanes=st.sampled_from([1, 2, 4]),
)
def test_reduce_matches_numpy(
    shape: list[int], data: st.DataObject, kind: str, clear: bool, lanes: int
) -> None:
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    out_shape = tuple(shape[: dim % len(shape)] + shape[dim % len(shape) + 1 :]) or (1,)
    src = tirx.decl_buffer(tuple(shape), "float32", name="S")
    dst = tirx.decl_buffer(out_shape, "float32", name="D")
    body = emit_tile_reduce(
        TileRegion.whole(src), TileRegion.whole(dst), dim, kind, clear, lanes=lanes
    )
    rng = np.random.default_rng(len(shape) * 7 + dim)
    s = (rng.integers(-8, 9, shape) / 4).astype(np.float32)
    d0 = (rng.integers(-8, 9, out_shape) / 4).astype(np.float32)
    _, d = run_on_host(_func([src, dst], body), s, d0)
    expected = np.asarray(_NUMPY_REDUCE[kind](s, dim % len(shape)), np.float32).reshape(out_shape)
    if not clear:
        expected = _NUMPY_FOLD[kind](d0, expected)
    np.testing.assert_array_equal(d, expected)


@pytest.mark.parametrize(("dim", "reverse"), [(0, False), (1, False), (1, True), (-2, True)])
def test_cumsum_matches_numpy(dim: int, reverse: bool) -> None:
    src = tirx.decl_buffer((5, 6), "float32", name="S")
    dst = tirx.decl_buffer((5, 6), "float32", name="D")
    body = emit_tile_cumsum(TileRegion.whole(src), TileRegion.whole(dst), dim=dim, reverse=reverse)
    s = np.arange(30, dtype=np.float32).reshape(5, 6) - 7
    _, d = run_on_host(_func([src, dst], body), s, np.zeros((5, 6), np.float32))
    axis = dim % 2
    expected = (
        np.flip(np.cumsum(np.flip(s, axis), axis=axis), axis) if reverse else np.cumsum(s, axis)
    )
    np.testing.assert_array_equal(d, expected)


def test_cumsum_in_place() -> None:
    buf = tirx.decl_buffer((9,), "int32", name="X")
    body = emit_tile_cumsum(TileRegion.whole(buf))
    (x,) = run_on_host(_func([buf], body), np.arange(9, dtype=np.int32))
    np.testing.assert_array_equal(x, np.cumsum(np.arange(9)))


def test_bad_inputs_raise_clear_errors() -> None:
    a = tirx.decl_buffer((4, 8), "float32", name="A")
    b = tirx.decl_buffer((8, 4), "float32", name="B")
    with pytest.raises(ValueError, match="tile shapes must match"):
        emit_tile_copy(TileRegion.whole(a), TileRegion.whole(b))
    with pytest.raises(ValueError, match=r"extents: expected 2 entries"):
        TileRegion(a, (0, 0), (4,))
    with pytest.raises(ValueError, match="expected positive ints"):
        TileRegion(a, (0, 0), (4, 0))
    with pytest.raises(TypeError, match="expected a TIR buffer"):
        TileRegion("A", (0,), (4,))
    with pytest.raises(ValueError, match=r"dim: expected an int in \[-2, 2\), got 2"):
        emit_tile_reduce(TileRegion.whole(a), TileRegion.whole(b), 2)
    with pytest.raises(ValueError, match="kind: expected one of"):
        emit_tile_reduce(TileRegion(a, (0, 0), (4, 4)), TileRegion(b, (0, 0), (4, 1)), 1, "mean")
    with pytest.raises(ValueError, match="must have src's extents"):
        emit_tile_reduce(TileRegion.whole(a), TileRegion.whole(b), 0)
    with pytest.raises(ValueError, match="lanes"):
        emit_tile_reduce(TileRegion(a, (0, 0), (4, 4)), TileRegion(b, (0, 0), (4, 1)), 1, lanes=0)


def test_fill_with_an_expression_value_is_cast() -> None:
    import tvm

    from tl_codegen_cpu.lowering import host_cpu_name

    scale = tirx.Var("scale", "int32")
    dst = tirx.decl_buffer((3, 4), "float32", name="D")
    body = emit_tile_fill(TileRegion.whole(dst), scale * 2)
    func = _func([scale, dst], body)
    lib = tvm.compile(func, target=tvm.target.Target({"kind": "llvm", "mcpu": host_cpu_name()}))
    d = tvm.runtime.tensor(np.zeros((3, 4), np.float32))
    lib["main"](3, d)
    np.testing.assert_array_equal(d.numpy(), np.full((3, 4), 6, np.float32))


def test_reduce_along_the_innermost_dim_uses_vector_lanes() -> None:
    src = tirx.decl_buffer((3, 32), "float32", name="S")
    dst = tirx.decl_buffer((3,), "float32", name="D")
    body = emit_tile_reduce(TileRegion.whole(src), TileRegion.whole(dst), 1, "sum", lanes=8)
    assert "reduce_lanes" in str(body)
    s = (np.arange(96, dtype=np.float32).reshape(3, 32) - 40) / 4
    _, d = run_on_host(_func([src, dst], body), s, np.zeros(3, np.float32))
    np.testing.assert_array_equal(d, s.sum(axis=1))
