"""Pass base class, Pipeline (order, callbacks, timings, IR dumps) and the registry."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass
from pathlib import Path
from typing import ClassVar

import pytest
import tvm
from tl_passes_testing import copy_func
from tvm import tirx

from tl_passes import (
    DUMP_IR_ENV,
    Pass,
    PassContext,
    Pipeline,
    SimplifyPass,
    is_kebab_case,
)
from tl_passes.pipeline import IRDumpError, PipelineStage, pipeline_from_passes
from tl_passes.registry import PASS_REGISTRY, available_passes, create_pass, get_pass_class


@dataclass(frozen=True)
class RecordPass(Pass):
    """Appends its label, the target kind and the ``tag`` option to a shared log."""

    name: ClassVar[str] = "record"
    label: str = ""
    log: list[str] | None = None

    def run(self, mod: tvm.IRModule, ctx: PassContext) -> tvm.IRModule:
        assert self.log is not None
        kind = str(ctx.target.kind.name) if ctx.target is not None else "-"
        self.log.append(f"{self.label}:{kind}:{ctx.options.get('tag', '')}")
        return mod


def stage(name: str, log: list[str]) -> PipelineStage:
    def apply(mod: tvm.IRModule, target: object) -> tvm.IRModule:
        log.append(name)
        return mod

    return PipelineStage(name, apply)


@dataclass(frozen=True)
class ReturnsNothingPass(Pass):
    name: ClassVar[str] = "returns-nothing"

    def run(self, mod: tvm.IRModule, ctx: PassContext) -> tvm.IRModule:
        return None  # type: ignore[return-value]


def small_module() -> tvm.IRModule:
    return tvm.IRModule({"main": copy_func()})


def test_pipeline_runs_stages_in_order_with_target_and_options() -> None:
    log: list[str] = []
    pipeline = Pipeline(
        "ordered", (stage("a", log), RecordPass("r", log), stage("c", log)), options={"tag": "t"}
    )
    pipeline.run(small_module(), tvm.target.Target("c"))
    assert log == ["a", "r:c:t", "c"]
    assert pipeline.stage_names == ("a", "record", "c")


def test_start_and_stop_bound_the_run() -> None:
    log: list[str] = []
    pipeline = Pipeline("bounded", tuple(stage(n, log) for n in ("one", "two", "three", "four")))
    pipeline.run(small_module(), start="two", stop="three")
    assert log == ["two", "three"]
    with pytest.raises(ValueError, match=r"start: expected one of the stages .* got 'five'"):
        pipeline.run(small_module(), start="five")
    with pytest.raises(ValueError, match=r"stop: expected a stage at or after 'three'"):
        pipeline.run(small_module(), start="three", stop="one")


def test_callbacks_and_timings_see_every_stage() -> None:
    seen: list[tuple[int, str]] = []
    pipeline = Pipeline("timed", (SimplifyPass(), RecordPass("x", [])), callbacks=())
    pipeline = pipeline.with_callbacks(lambda i, p, mod, s: seen.append((i, p.name)))
    run = pipeline.run_with_timings(small_module())
    assert seen == [(1, "simplify"), (2, "record")]
    assert [t.name for t in run.timings] == ["simplify", "record"]
    assert all(t.seconds >= 0 for t in run.timings)
    assert run.total_seconds == pytest.approx(sum(t.seconds for t in run.timings))
    assert isinstance(run.module, tvm.IRModule)


def test_dump_dir_option_writes_numbered_files(tmp_path: Path) -> None:
    pipeline = pipeline_from_passes("dumped", (SimplifyPass(), create_pass("remove-no-op")))
    pipeline.run(small_module(), dump_dir=tmp_path)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["00-input.tir", "01-simplify.tir", "02-remove-no-op.tir"]
    assert "def main" in (tmp_path / "01-simplify.tir").read_text()


def test_dumps_keep_whole_pipeline_positions_when_starting_later(tmp_path: Path) -> None:
    log: list[str] = []
    pipeline = Pipeline("later", (stage("one", log), stage("two", log)))
    pipeline.run(small_module(), dump_dir=tmp_path, start="two")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["00-input.tir", "02-two.tir"]


def test_dump_ir_environment_variable_uses_a_subdirectory_per_pipeline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DUMP_IR_ENV, str(tmp_path / "dumps"))
    Pipeline("env-dumped", (SimplifyPass(),)).run(small_module())
    assert sorted(p.name for p in (tmp_path / "dumps" / "env-dumped").iterdir()) == [
        "00-input.tir",
        "01-simplify.tir",
    ]


def test_no_dump_without_option_or_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DUMP_IR_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    Pipeline("quiet", (SimplifyPass(),)).run(small_module())
    assert list(tmp_path.iterdir()) == []


def test_a_dump_ir_path_under_a_file_names_the_variable_and_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(DUMP_IR_ENV, str(blocker / "dumps"))
    with pytest.raises(IRDumpError) as caught:
        Pipeline("blocked", (SimplifyPass(),)).run(small_module())
    message = str(caught.value)
    assert DUMP_IR_ENV in message and str(blocker / "dumps" / "blocked") in message
    assert "cannot create the IR dump directory" in message


def test_a_dump_dir_that_is_a_file_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(IRDumpError, match=r"dump_dir: .*a-file"):
        Pipeline("blocked", (SimplifyPass(),)).run(small_module(), dump_dir=blocker)


def test_a_dump_file_that_cannot_be_written_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A directory where the dump file should go makes the write fail (also as root).
    (tmp_path / "dumps" / "unwritable" / "00-input.tir").mkdir(parents=True)
    monkeypatch.setenv(DUMP_IR_ENV, str(tmp_path / "dumps"))
    with pytest.raises(IRDumpError, match=r"TL_DUMP_IR=.*cannot write the IR dump .*00-input"):
        Pipeline("unwritable", (SimplifyPass(),)).run(small_module())


def test_pipeline_is_frozen_and_validates() -> None:
    pipeline = Pipeline("checked", [SimplifyPass()])  # type: ignore[arg-type]
    assert isinstance(pipeline.stages, tuple)
    with pytest.raises(FrozenInstanceError):
        pipeline.stages = ()  # type: ignore[misc]
    same = Pipeline("checked", (SimplifyPass(),), options={"a": 1})
    assert pipeline == Pipeline("checked", (SimplifyPass(),)) and hash(pipeline) == hash(same)
    with pytest.raises(TypeError, match=r"stages\[1\]: expected a tl_passes.Pass instance"):
        Pipeline("checked", (SimplifyPass(), "simplify"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"callbacks\[0\]: expected a callable"):
        Pipeline("checked", (SimplifyPass(),), callbacks=(3,))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"kebab-case"):
        Pipeline("Not Kebab", (SimplifyPass(),))
    with pytest.raises(ValueError, match=r"at least one stage"):
        Pipeline("empty", ())
    with pytest.raises(ValueError, match=r"'simplify' appears twice"):
        Pipeline("twice", (SimplifyPass(), SimplifyPass()))
    with pytest.raises(TypeError, match=r"expected a tvm\.IRModule"):
        pipeline.run("not a module")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="stage 'returns-nothing' of pipeline 'none'"):
        Pipeline("none", (ReturnsNothingPass(),)).run(small_module())


def test_pipeline_stage_validates_and_is_immutable() -> None:
    def identity(mod: tvm.IRModule, target: object) -> tvm.IRModule:
        return mod

    with pytest.raises(ValueError, match=r"PipelineStage.name: expected a kebab-case"):
        PipelineStage("LowerCopy", identity)
    with pytest.raises(TypeError, match=r"PipelineStage.apply: expected a callable"):
        PipelineStage("lower-copy", "not callable")  # type: ignore[arg-type]
    made = PipelineStage("lower-copy", identity)
    assert made == PipelineStage("lower-copy", identity) and made.name == "lower-copy"
    with pytest.raises(AttributeError, match="immutable"):
        made.apply = identity  # type: ignore[misc]


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
