"""Atomics on the CPU: many parallel iterations updating the same elements agree with numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tvm
from cpu_passes_testing import build_prepared_c
from tvm import tirx

from tl_codegen_cpu import build_llvm
from tl_codegen_cpu.lowering import ATOMIC_DTYPES, TileRegion, emit_atomic_update, emit_tile_atomic

ITERATIONS = 4000


def _contended_module(kind: str, dtype: str) -> tvm.IRModule:
    # Every parallel iteration updates out[i % 4] with values[i]: real contention.
    i = tirx.Var("i", "int32")
    values = tirx.decl_buffer((ITERATIONS,), dtype, name="Values")
    out = tirx.decl_buffer((4,), dtype, name="Out")
    update = emit_atomic_update(out, [i % 4], tirx.BufferLoad(values, [i]), kind)
    body = tirx.For(i, 0, ITERATIONS, tirx.ForKind.PARALLEL, update)
    func = tirx.PrimFunc([values, out], body).with_attrs({"global_symbol": "main"})
    return tvm.IRModule({"main": func})


@pytest.mark.parametrize("builder", [build_prepared_c, build_llvm])
@pytest.mark.parametrize("kind", ["add", "max", "min"])
@pytest.mark.parametrize("dtype", list(ATOMIC_DTYPES))
def test_contended_atomic_updates(builder: object, kind: str, dtype: str, tmp_path: Path) -> None:
    result = builder(_contended_module(kind, dtype), tmp_path)  # type: ignore[operator]
    lib = tvm.runtime.load_module(str(result.library_path))
    rng = np.random.default_rng(0)
    values = rng.integers(-50, 50, ITERATIONS).astype(dtype)
    start = np.zeros(4, dtype)
    out = tvm.runtime.tensor(start.copy())
    lib["main"](tvm.runtime.tensor(values), out)
    grouped = values.reshape(-1, 4)
    reduce = {"add": np.sum, "max": np.max, "min": np.min}[kind]
    combine = {"add": np.add, "max": np.maximum, "min": np.minimum}[kind]
    # Integers in a float sum are exact, so the order of updates does not matter.
    # In the dtype: numpy sums uint32 in uint64; the atomics wrap as the dtype does.
    np.testing.assert_array_equal(
        out.numpy(), combine(start, reduce(grouped, axis=0).astype(dtype))
    )


@pytest.mark.parametrize("builder", [build_prepared_c, build_llvm])
@pytest.mark.parametrize("owned", [False, True], ids=["atomic", "owned"])
def test_tile_atomic_add_of_a_tile_and_a_scalar(
    builder: object, owned: bool, tmp_path: Path
) -> None:
    src = tirx.decl_buffer((3, 5), "float32", name="S")
    out = tirx.decl_buffer((4, 4), "float32", name="Out")
    # The 3x5 tile at (2, 1) hangs over out's edge: those elements are skipped (also
    # by the plain read-modify-write of an owned update).
    body = tirx.SeqStmt(
        [
            emit_tile_atomic(
                TileRegion(out, (2, 1), (3, 5)), TileRegion.whole(src), "add", owned=owned
            ),
            emit_tile_atomic(TileRegion(out, (0, 0), (1, 4)), 10.0, "max", owned=owned),
        ]
    )
    func = tirx.PrimFunc([src, out], body).with_attrs({"global_symbol": "main"})
    result = builder(tvm.IRModule({"main": func}), tmp_path)  # type: ignore[operator]
    lib = tvm.runtime.load_module(str(result.library_path))
    s = np.arange(15, dtype=np.float32).reshape(3, 5)
    o = tvm.runtime.tensor(np.ones((4, 4), np.float32))
    lib["main"](tvm.runtime.tensor(s), o)
    expected = np.ones((4, 4), np.float32)
    expected[2:4, 1:4] += s[:2, :3]
    expected[0, :] = 10.0
    np.testing.assert_array_equal(o.numpy(), expected)


def test_atomic_errors() -> None:
    out = tirx.decl_buffer((4,), "int8", name="Narrow")
    with pytest.raises(ValueError, match="dtype int8 is not supported on the CPU"):
        emit_atomic_update(out, [0], 1.0)
    with pytest.raises(ValueError, match="kind: expected one of"):
        emit_atomic_update(tirx.decl_buffer((4,), "float32", name="F"), [0], 1.0, "mul")
