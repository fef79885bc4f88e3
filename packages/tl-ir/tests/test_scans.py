"""T.cumsum / T.cummax: one scan op parameterized by its combine, TileLang's signature."""

import dataclasses

import numpy as np
import pytest

import tl_ir
import tl_ir.language as T
from tl_ir.interpret import run
from tl_ir.ops import CumsumOp, describe, encode, scan_parts, tile_ops


def _scan_kernel(scan, dim, reverse, dtype="float32", fragment=False):
    @T.prim_func
    def main(A: T.Tensor((6, 10), dtype), B: T.Tensor((6, 10), dtype)):
        with T.Kernel(1, threads=32):
            tile = (T.alloc_fragment if fragment else T.alloc_shared)((6, 10), dtype)
            T.copy(A, tile)
            scan(src=tile, dim=dim, reverse=reverse)
            T.copy(tile, B)

    return main


def _reference(a, dim, reverse, accumulate):
    if reverse:
        return np.flip(accumulate(np.flip(a, dim), axis=dim), dim)
    return accumulate(a, axis=dim)


@pytest.mark.parametrize(("dim", "reverse"), [(0, False), (1, False), (1, True), (-2, True)])
@pytest.mark.parametrize("fragment", [False, True])
def test_cummax_is_a_running_maximum(dim, reverse, fragment):
    a = np.random.default_rng(dim + 7 * reverse).standard_normal((6, 10)).astype(np.float32)
    a[2, 3] = -np.inf
    b = np.zeros_like(a)
    run(_scan_kernel(T.cummax, dim, reverse, fragment=fragment), [a, b])
    np.testing.assert_array_equal(b, _reference(a, dim % 2, reverse, np.maximum.accumulate))


def test_cumsum_still_sums():
    a = np.arange(60, dtype=np.int32).reshape(6, 10) - 30
    b = np.zeros_like(a)
    run(_scan_kernel(T.cumsum, 1, True, dtype="int32"), [a, b])
    np.testing.assert_array_equal(b, _reference(a, 1, True, np.cumsum))


def test_cummax_encodes_its_kind_and_round_trips():
    (_, scan, _) = tile_ops(_scan_kernel(T.cummax, 1, True))
    assert isinstance(scan, CumsumOp)
    assert (scan.kind, scan.dim, scan.reverse) == ("max", 1, True)
    call = encode(scan)
    assert str(call.op.name) == "tl.cummax"
    assert describe(call) == scan
    (_, summed, _) = tile_ops(_scan_kernel(T.cumsum, 0, False))
    assert summed.kind == "sum" and str(encode(summed).op.name) == "tl.cumsum"
    with pytest.raises(TypeError, match="scan kind must be one of"):
        encode(dataclasses.replace(scan, kind="min"))


def test_scan_identities():
    identity, combine = scan_parts("max", "float16")
    assert float(identity.value) == -np.inf
    assert int(scan_parts("max", "int8")[0].value) == -128
    assert int(scan_parts("sum", "int32")[0].value) == 0
    assert combine is not None
    with pytest.raises(ValueError, match="kind must be one of"):
        scan_parts("prod", "float32")
    assert tl_ir.SCAN_KINDS == ("sum", "max")


def test_cummax_errors_name_the_op():
    with pytest.raises(tl_ir.KernelTypeError, match=r"T\.cummax.*dim 2 is out of range"):
        _scan_kernel(T.cummax, 2, False)

    with pytest.raises(tl_ir.ShapeMismatchError, match=r"T\.cummax"):

        @T.prim_func
        def mismatch(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32):
                s = T.alloc_shared((8,), "float32")
                d = T.alloc_shared((4,), "float32")
                T.cummax(s, d)
