"""`tl_ir.index_ranges.range_analyzer`: binds each loop/bound variable defined once, and
none defined twice (a pass that duplicates a loop body with its variable): binding the
first definition would prove facts the second does not have, and TVM refused the
second binding (`cpu-wrap-integer-overflow` failed on a dequantizing GEMM's IR)."""

from __future__ import annotations

from tvm import tirx

from tl_ir.index_ranges import proves, range_analyzer


def _store(var: tirx.Var) -> tirx.Stmt:
    buffer = tirx.decl_buffer((16,), "int32", name="B")
    return tirx.BufferStore(buffer, var, [tirx.const(0, "int32")])


def test_a_variable_defined_once_is_bound() -> None:
    i = tirx.Var("i", "int32")
    body = tirx.For(i, 0, 4, tirx.ForKind.SERIAL, _store(i))
    analyzer = range_analyzer(body)
    assert proves(analyzer, i < 4)


def test_a_variable_defined_twice_stays_unknown() -> None:
    i = tirx.Var("i", "int32")
    k = tirx.Var("k", "int32")
    body = tirx.SeqStmt(
        [
            tirx.For(i, 0, 4, tirx.ForKind.SERIAL, _store(i)),
            tirx.For(i, 0, 8, tirx.ForKind.SERIAL, _store(i)),
            tirx.Bind(k, i + 1),
            tirx.Bind(k, i + 2),
        ]
    )
    analyzer = range_analyzer(body)
    assert not proves(analyzer, i < 4)
    assert not proves(analyzer, k == i + 1)
