"""emit_tile_cumsum(kind="max"): T.cummax's running maximum against numpy, partial tiles,
-inf inputs and integer dtypes included."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_passes_testing import run_on_host
from tvm import tirx

from tl_codegen_cpu.lowering import TileRegion, emit_tile_cumsum


def _func(params: list[object], body: tirx.Stmt) -> tirx.PrimFunc:
    return tirx.PrimFunc(params, body).with_attrs({"global_symbol": "main", "tir.noalias": True})


def _running_max(a: np.ndarray, axis: int, reverse: bool) -> np.ndarray:
    if reverse:
        return np.flip(np.maximum.accumulate(np.flip(a, axis), axis=axis), axis)
    return np.maximum.accumulate(a, axis=axis)


@pytest.mark.parametrize(("dim", "reverse"), [(0, False), (1, False), (1, True), (-2, True)])
def test_cummax_matches_numpy_with_minus_infinity(dim: int, reverse: bool) -> None:
    src = tirx.decl_buffer((5, 6), "float32", name="S")
    dst = tirx.decl_buffer((5, 6), "float32", name="D")
    body = emit_tile_cumsum(TileRegion.whole(src), TileRegion.whole(dst), dim, reverse, "max")
    s = np.random.default_rng(dim % 2 + 2 * reverse).standard_normal((5, 6)).astype(np.float32)
    s[:, 0] = -np.inf  # a running max that starts below every finite value stays exact
    s[0, :] = -np.inf
    _, d = run_on_host(_func([src, dst], body), s, np.zeros((5, 6), np.float32))
    np.testing.assert_array_equal(d, _running_max(s, dim % 2, reverse))


def test_cummax_int8_in_place_starts_from_the_lowest_value() -> None:
    buf = tirx.decl_buffer((9,), "int8", name="X")
    x0 = np.array([-128, -128, -5, 3, -7, 3, 100, -128, 127], np.int8)
    (x,) = run_on_host(_func([buf], emit_tile_cumsum(TileRegion.whole(buf), kind="max")), x0)
    np.testing.assert_array_equal(x, np.maximum.accumulate(x0))


def test_cummax_partial_tile_reads_only_inside_the_buffer() -> None:
    # A 4 x 8 tile anchored at row 3 of a 5-row source: rows 5, 6 are outside it and are
    # neither read (they would be garbage) nor written.
    src = tirx.decl_buffer((5, 8), "float32", name="S")
    dst = tirx.decl_buffer((5, 8), "float32", name="D")
    body = emit_tile_cumsum(
        TileRegion(src, (3, 0), (4, 8)), TileRegion(dst, (3, 0), (4, 8)), 0, True, "max"
    )
    s = np.random.default_rng(3).standard_normal((5, 8)).astype(np.float32) - 10
    d0 = np.full((5, 8), 7.0, np.float32)
    _, d = run_on_host(_func([src, dst], body), s, d0)
    expected = d0.copy()
    expected[3:] = _running_max(s[3:], 0, True)
    np.testing.assert_array_equal(d, expected)


def test_unknown_scan_kind_is_a_clear_error() -> None:
    buf = tirx.decl_buffer((4,), "float32", name="X")
    with pytest.raises(ValueError, match=r"kind must be one of \('sum', 'max'\), got 'prod'"):
        emit_tile_cumsum(TileRegion.whole(buf), kind="prod")
