"""`PrimFuncPass`: the base that owns the per-PrimFunc loop."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest
import tvm
from tl_passes_testing import copy_func
from tvm import tirx

from tl_passes import PassContext, PrimFuncPass


def two_function_module() -> tvm.IRModule:
    first = copy_func().with_attr("global_symbol", "first")
    second = copy_func().with_attr("global_symbol", "second")
    return tvm.IRModule({"first": first, "second": second})


@dataclass(frozen=True)
class WrapInSeqPass(PrimFuncPass):
    """Wraps the body of the named functions in a one-statement sequence."""

    name: ClassVar[str] = "wrap-in-seq"
    only: tuple[str, ...] = ()
    seen: list[str] | None = None

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        if self.seen is not None:
            self.seen.append(function_name)
        if function_name not in self.only:
            return body
        return tirx.SeqStmt([body, tirx.Evaluate(tirx.IntImm("int32", 0))])


@dataclass(frozen=True)
class NeverAppliesPass(WrapInSeqPass):
    name: ClassVar[str] = "never-applies"

    def applies_to(self, ctx: PassContext) -> bool:
        return False


@dataclass(frozen=True)
class OverridesNothingPass(PrimFuncPass):
    name: ClassVar[str] = "overrides-nothing"


def test_visits_every_primfunc_and_replaces_only_the_changed_ones() -> None:
    mod = two_function_module()
    seen: list[str] = []
    result = WrapInSeqPass(only=("second",), seen=seen).run(mod, PassContext())
    assert sorted(seen) == ["first", "second"]
    assert result["first"].same_as(mod["first"])
    assert not result["second"].same_as(mod["second"])
    assert isinstance(result["second"].body, tirx.SeqStmt)


def test_returns_the_input_module_when_nothing_changed() -> None:
    mod = two_function_module()
    assert WrapInSeqPass().run(mod, PassContext()).same_as(mod)


def test_applies_to_false_skips_the_whole_module() -> None:
    mod = two_function_module()
    seen: list[str] = []
    assert NeverAppliesPass(only=("first",), seen=seen).run(mod, PassContext()).same_as(mod)
    assert seen == []


def test_a_pass_overriding_no_hook_says_what_is_missing() -> None:
    with pytest.raises(NotImplementedError, match=r"OverridesNothingPass.*transform_body"):
        OverridesNothingPass().run(two_function_module(), PassContext())


def test_where_names_the_pass_and_the_function() -> None:
    assert WrapInSeqPass().where("main") == "wrap-in-seq (main)"
