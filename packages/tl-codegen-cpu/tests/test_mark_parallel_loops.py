"""`cpu-mark-parallel-loops`: the OpenMP marker goes before each outermost parallel loop."""

from __future__ import annotations

import tvm
from tvm import tirx

from tl_codegen_cpu.passes import PARALLEL_FOR_MARKER, CpuMarkParallelLoopsPass
from tl_passes import PassContext


def _store_loop(kind: tirx.ForKind, inner: tirx.Stmt | None = None) -> tirx.For:
    i = tirx.Var("i", "int32")
    buf = tirx.decl_buffer((8, 8), "float32", name="X")
    body = inner if inner is not None else tirx.BufferStore(buf, tirx.const(1, "float32"), [0, i])
    return tirx.For(i, 0, 8, kind, body)


def _module(body: tirx.Stmt) -> tvm.IRModule:
    buf = tirx.decl_buffer((8, 8), "float32", name="X")
    func = tirx.PrimFunc([buf], body).with_attrs({"global_symbol": "f"})
    return tvm.IRModule({"f": func})


def test_marker_before_outermost_parallel_loop_and_nested_made_serial() -> None:
    nested = _store_loop(tirx.ForKind.PARALLEL, _store_loop(tirx.ForKind.PARALLEL))
    body = tirx.SeqStmt([_store_loop(tirx.ForKind.SERIAL), nested])
    out = CpuMarkParallelLoopsPass().run(_module(body), PassContext())
    text = out.script()
    assert text.count(PARALLEL_FOR_MARKER) == 1
    assert text.count("T.parallel") == 1
    marker_at, parallel_at = text.index(PARALLEL_FOR_MARKER), text.index("T.parallel")
    assert marker_at < parallel_at


def test_marker_inside_serial_loop() -> None:
    body = _store_loop(tirx.ForKind.SERIAL, _store_loop(tirx.ForKind.PARALLEL))
    out = CpuMarkParallelLoopsPass(marker="MY_MARK").run(_module(body), PassContext())
    assert out.script().count("MY_MARK") == 1


def test_module_without_parallel_loops_is_returned_unchanged() -> None:
    mod = _module(_store_loop(tirx.ForKind.SERIAL))
    assert CpuMarkParallelLoopsPass().run(mod, PassContext()).same_as(mod)


def test_parallel_loop_under_if_and_attr_is_marked() -> None:
    inner = _store_loop(tirx.ForKind.PARALLEL)
    cond = tirx.IfThenElse(tirx.const(True, "bool"), inner, None)
    body = tirx.AttrStmt(tirx.const(0, "int32"), "pragma_test", tirx.const(1, "int32"), cond)
    out = CpuMarkParallelLoopsPass().run(_module(body), PassContext()).script()
    assert out.count(PARALLEL_FOR_MARKER) == 1 and out.count("T.parallel") == 1


def test_marking_twice_does_not_duplicate_markers_inside() -> None:
    nested = _store_loop(tirx.ForKind.PARALLEL, _store_loop(tirx.ForKind.PARALLEL))
    once = CpuMarkParallelLoopsPass().run(_module(nested), PassContext())
    assert once.script().count(PARALLEL_FOR_MARKER) == 1
