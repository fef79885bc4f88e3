"""`cpu-stack-block-locals`: allocations inside parallel loops are kept off TVM's heap workspaces."""

from __future__ import annotations

import pytest
import tvm
import tvm_ffi
from cpu_passes_testing import make_pass
from tvm import tirx

from tl_codegen_cpu.passes import (
    DISABLE_LOWER_BUILTIN,
    STACK_BYTES_ATTR,
    BlockLocalsTooLargeError,
    CpuStackBlockLocalsPass,
)
from tl_passes import PassContext


def _module(elements: int, parallel: bool) -> tvm.IRModule:
    i = tirx.Var("i", "int32")
    local = tirx.decl_buffer((elements,), "float32", name="Local")
    out = tirx.decl_buffer((4,), "float32", name="Out")
    body = tirx.SeqStmt(
        [
            tirx.AllocBuffer(local),
            tirx.BufferStore(local, tirx.const(2, "float32"), [i]),
            tirx.BufferStore(out, tirx.BufferLoad(local, [i]), [i]),
        ]
    )
    kind = tirx.ForKind.PARALLEL if parallel else tirx.ForKind.SERIAL
    func = tirx.PrimFunc([out], tirx.For(i, 0, 4, kind, body)).with_attrs({"global_symbol": "f"})
    return tvm.IRModule({"f": func})


def _annotated(mod: tvm.IRModule) -> list[bool]:
    flags: list[bool] = []

    def visit(alloc: tirx.AllocBuffer) -> None:
        flags.append(DISABLE_LOWER_BUILTIN in (alloc.annotations or {}))

    tvm_ffi.structural_walk(mod["f"].body, (tirx.AllocBuffer, visit), order="post")
    return flags


def test_allocations_in_parallel_loops_are_annotated_and_stay_off_the_heap() -> None:
    out = CpuStackBlockLocalsPass().run(_module(4096, parallel=True), PassContext())
    assert _annotated(out) == [True]
    config = {"tirx.disable_storage_rewrite": True}
    with tvm.transform.PassContext(config=config):
        source = tvm.compile(out, target="c").mod.inspect_source()
    assert "TVMBackendAllocWorkspace" not in source


def test_allocations_outside_parallel_loops_are_left_alone() -> None:
    mod = _module(4096, parallel=False)
    assert CpuStackBlockLocalsPass().run(mod, PassContext()).same_as(mod)


def test_budget_is_an_option_and_enforced() -> None:
    small_budget = make_pass("cpu-stack-block-locals", max_bytes=1024)
    assert isinstance(small_budget, CpuStackBlockLocalsPass) and small_budget.max_bytes == 1024
    with pytest.raises(BlockLocalsTooLargeError, match=r"take 16384 bytes, more than .* 1024"):
        small_budget.run(_module(4096, parallel=True), PassContext())


def test_stack_need_is_recorded_for_the_manifest() -> None:
    out = CpuStackBlockLocalsPass().run(_module(4096, parallel=True), PassContext())
    assert int(out["f"].attrs[STACK_BYTES_ATTR]) == 4096 * 4
    serial = CpuStackBlockLocalsPass().run(_module(4096, parallel=False), PassContext())
    assert STACK_BYTES_ATTR not in (serial["f"].attrs or {})
