"""Pass base class, Pipeline (order, callbacks, timings, IR dumps) and the registry."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass
from pathlib import Path
from typing import ClassVar

import pytest
import tvm
from tl_passes_testing import microkernel_func
from tvm import tirx

from tl_passes import (
    DUMP_IR_ENV,
    PASS_REGISTRY,
    Pass,
    PassContext,
    Pipeline,
    SimplifyPass,
    available_passes,
    create_pass,
    get_pass_class,
    is_kebab_case,
)


@dataclass(frozen=True)
class RecordPass(Pass):
    """Appends its label to a shared log and returns the module unchanged."""

    name: ClassVar[str] = "record"
    label: str = ""
    log: list[str] | None = None

    def run(self, mod: tvm.IRModule, ctx: PassContext) -> tvm.IRModule:
        assert self.log is not None
        self.log.append(f"{self.label}:{ctx.options.get('tag', '')}")
        return mod


@dataclass(frozen=True)
class ReturnsNothingPass(Pass):
    name: ClassVar[str] = "returns-nothing"

    def run(self, mod: tvm.IRModule, ctx: PassContext) -> tvm.IRModule:
        return None  # type: ignore[return-value]


def small_module() -> tvm.IRModule:
    return tvm.IRModule({"main": microkernel_func(2, 3, 1)})


def test_pipeline_runs_passes_in_order_with_context() -> None:
    log: list[str] = []
    pipeline = Pipeline((RecordPass("a", log), RecordPass("b", log), RecordPass("c", log)))
    pipeline.run(small_module(), PassContext(options={"tag": "t"}))
    assert log == ["a:t", "b:t", "c:t"]
    assert pipeline.names == ("record", "record", "record")


def test_callbacks_and_timings_see_every_pass() -> None:
    seen: list[tuple[int, str]] = []
    pipeline = Pipeline((SimplifyPass(), RecordPass("x", [])), callbacks=())
    pipeline = pipeline.with_callbacks(lambda i, p, mod, s: seen.append((i, p.name)))
    run = pipeline.run_with_timings(small_module())
    assert seen == [(1, "simplify"), (2, "record")]
    assert [t.name for t in run.timings] == ["simplify", "record"]
    assert all(t.seconds >= 0 for t in run.timings)
    assert run.total_seconds == pytest.approx(sum(t.seconds for t in run.timings))
    assert isinstance(run.module, tvm.IRModule)


def test_dump_dir_option_writes_numbered_files(tmp_path: Path) -> None:
    Pipeline((SimplifyPass(), create_pass("remove-no-op")), dump_dir=tmp_path).run(small_module())
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["00-input.tir", "01-simplify.tir", "02-remove-no-op.tir"]
    assert "def main" in (tmp_path / "01-simplify.tir").read_text()


def test_dump_ir_environment_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DUMP_IR_ENV, str(tmp_path / "dumps"))
    Pipeline((SimplifyPass(),)).run(small_module())
    assert sorted(p.name for p in (tmp_path / "dumps").iterdir()) == [
        "00-input.tir",
        "01-simplify.tir",
    ]


def test_no_dump_without_option_or_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DUMP_IR_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    Pipeline((SimplifyPass(),)).run(small_module())
    assert list(tmp_path.iterdir()) == []


def test_pipeline_is_frozen_and_validates() -> None:
    pipeline = Pipeline([SimplifyPass()])  # type: ignore[arg-type]
    assert isinstance(pipeline.passes, tuple)
    with pytest.raises(FrozenInstanceError):
        pipeline.passes = ()  # type: ignore[misc]
    with pytest.raises(TypeError, match=r"passes\[1\]: expected a tl_passes.Pass instance"):
        Pipeline((SimplifyPass(), "simplify"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"callbacks\[0\]: expected a callable"):
        Pipeline((SimplifyPass(),), callbacks=(3,))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"expected a tvm\.IRModule"):
        pipeline.run("not a module")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="'returns-nothing' returned NoneType"):
        Pipeline((ReturnsNothingPass(),)).run(small_module())


def test_pass_names_must_be_kebab_case() -> None:
    assert is_kebab_case("lower-tile-copy") and not is_kebab_case("LowerTileCopy")
    with pytest.raises(TypeError, match="kebab-case"):

        @dataclass(frozen=True)
        class BadName(Pass):
            name: ClassVar[str] = "Bad_Name"

            def run(self, mod: tvm.IRModule, ctx: PassContext) -> tvm.IRModule:
                return mod


def test_every_registry_key_equals_the_pass_name() -> None:
    assert available_passes() == tuple(sorted(PASS_REGISTRY))
    for key, factory in PASS_REGISTRY.items():
        cls = factory()
        assert cls.name == key
        assert get_pass_class(key) is cls
        assert isinstance(cls(), Pass)


def test_registry_errors_name_the_problem() -> None:
    with pytest.raises(KeyError, match="unknown pass name 'nope'; registered passes: "):
        create_pass("nope")
    with pytest.raises(TypeError, match="pass 'simplify': bad options"):
        create_pass("simplify", level=3)


def test_simplify_pass_simplifies() -> None:
    x = tirx.Var("x", "int32")
    buf = tirx.decl_buffer((4,), "int32", name="B")
    one, zero = tirx.const(1, "int32"), tirx.const(0, "int32")
    body = tirx.BufferStore(buf, tirx.Add(tirx.Mul(x, one), zero), [0])
    func = tirx.PrimFunc([x, buf], body).with_attrs({"global_symbol": "f"})
    out = SimplifyPass().run(tvm.IRModule({"f": func}), PassContext())
    assert "T.Mul(x, 1)" in tvm.IRModule({"f": func}).script()
    assert "T.Mul" not in out.script() and "B[0] = x" in out.script()
