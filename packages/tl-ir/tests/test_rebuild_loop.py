"""tl_ir.launch.rebuild_loop: the one way a pass rebuilds a loop keeps what it is not told to change."""

from __future__ import annotations

import pytest
from tvm import tirx

from tl_ir.launch import LOOP_KIND_KEY, annotations_without, rebuild_loop


def _loop(**kwargs: object) -> tirx.For:
    i = tirx.Var("i", "int32")
    body = tirx.Evaluate(tirx.const(0, "int32"))
    return tirx.For(i, 2, 8, tirx.ForKind.SERIAL, body, **kwargs)  # type: ignore[arg-type]


def test_fields_not_given_are_kept() -> None:
    loop = _loop(annotations={LOOP_KIND_KEY: "parallel", "num_stages": 2})
    copy = rebuild_loop(loop)
    assert copy.loop_var.same_as(loop.loop_var)
    assert int(copy.min) == 2 and int(copy.extent) == 8
    assert copy.kind == tirx.ForKind.SERIAL
    assert copy.body.same_as(loop.body)
    assert dict(copy.annotations) == {LOOP_KIND_KEY: "parallel", "num_stages": 2}


def test_given_fields_replace_and_none_clears_annotations() -> None:
    loop = _loop(annotations={LOOP_KIND_KEY: "parallel"})
    body = tirx.Evaluate(tirx.const(1, "int32"))
    copy = rebuild_loop(
        loop, body=body, kind=tirx.ForKind.VECTORIZED, annotations=None, extent=tirx.const(4)
    )
    assert copy.body.same_as(body)
    assert copy.kind == tirx.ForKind.VECTORIZED
    assert int(copy.extent) == 4
    assert len(copy.annotations) == 0
    assert copy.loop_var.same_as(loop.loop_var) and int(copy.min) == 2


def test_a_thread_binding_stays_only_on_a_thread_binding_loop() -> None:
    i = tirx.Var("tx", "int32")
    binding = tirx.IterVar(None, i, tirx.IterVar.ThreadIndex, "threadIdx.x")
    body = tirx.Evaluate(tirx.const(0, "int32"))
    loop = tirx.For(i, 0, 32, tirx.ForKind.THREAD_BINDING, body, binding)
    assert rebuild_loop(loop, body=body).thread_binding.same_as(binding)
    assert rebuild_loop(loop, kind=tirx.ForKind.SERIAL).thread_binding is None


def test_annotations_without_drops_only_the_named_keys() -> None:
    loop = _loop(annotations={LOOP_KIND_KEY: "pipelined", "num_stages": 3, "other": 1})
    assert set(annotations_without(loop, (LOOP_KIND_KEY, "num_stages"))) == {"other"}
    assert annotations_without(_loop(), (LOOP_KIND_KEY,)) == {}


def test_a_statement_that_is_not_a_loop_is_refused() -> None:
    with pytest.raises(TypeError, match=r"rebuild_loop: expected a tirx\.For, got Evaluate"):
        rebuild_loop(tirx.Evaluate(tirx.const(0, "int32")))
