"""Index values of a block body: lets and single-value local scalars inlined, so that an
index ``B[idx[0]]`` reads as the grid and loop Vars it was computed from."""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.index_values import (
    binding_ranges,
    forwarded_scalars,
    inline_index_values,
)

BX = tirx.Var("bx", "int32")
LOOP_I = tirx.Var("i", "int32")


def _scalar(name: str) -> Any:
    return tirx.decl_buffer((1,), "int32", name=name, scope="local")


def _loop(body: tirx.Stmt) -> tirx.Stmt:
    return tirx.For(LOOP_I, 0, 32, tirx.ForKind.SERIAL, body)


def _store_into(out: Any, idx: Any) -> tirx.Stmt:
    return tirx.BufferStore(out, tirx.const(1.0, "float32"), [tirx.BufferLoad(idx, [0])])


def test_a_scalar_stored_once_before_its_reads_is_forwarded() -> None:
    idx, out = _scalar("idx"), tirx.decl_buffer((1024,), "float32", name="Out")
    body = _loop(
        tirx.SeqStmt([tirx.BufferStore(idx, BX * 32 + LOOP_I, [0]), _store_into(out, idx)])
    )
    scalars = forwarded_scalars(body)
    assert len(scalars) == 1
    ranges = binding_ranges(body, [(BX, 32)])
    assert ranges is not None
    inlined = inline_index_values(tirx.BufferLoad(idx, [0]) + 1, ranges, scalars)
    assert tvm_ffi.structural_equal(
        tvm.sym.Analyzer().simplify(inlined), tvm.sym.Analyzer().simplify(BX * 32 + LOOP_I + 1)
    )


def test_scalars_that_may_hold_another_value_are_not_forwarded() -> None:
    idx, out = _scalar("idx"), tirx.decl_buffer((1024,), "float32", name="Out")
    data = tirx.decl_buffer((1024,), "int32", name="Data")
    twice = _loop(
        tirx.SeqStmt(
            [
                tirx.BufferStore(idx, BX * 32 + LOOP_I, [0]),
                _store_into(out, idx),
                tirx.BufferStore(idx, BX, [0]),
            ]
        )
    )
    read_first = _loop(tirx.SeqStmt([_store_into(out, idx), tirx.BufferStore(idx, LOOP_I, [0])]))
    from_memory = _loop(
        tirx.SeqStmt(
            [tirx.BufferStore(idx, tirx.BufferLoad(data, [LOOP_I]), [0]), _store_into(out, idx)]
        )
    )
    for body in (twice, read_first, from_memory):
        assert forwarded_scalars(body) == {}


def test_a_var_bound_twice_has_no_ranges() -> None:
    body = tirx.SeqStmt(
        [_loop(tirx.Evaluate(tirx.const(0, "int32"))), _loop(tirx.Evaluate(tirx.const(0, "int32")))]
    )
    assert binding_ranges(body, [(BX, 4)]) is None
