"""The CPU passes recognise builtins under the names TVM 0.27 registers.

``if_then_else``, ``ceil`` and ``likely`` live under ``prim.``, not ``tirx.``; the PTX
async-copy builtins under ``tirx.ptx.``. Each test builds the call through TVM's own
constructor (so with the real op) and checks the pass's decision on it.
"""

from __future__ import annotations

import pytest
import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.passes.legalize_half_precision import legalize_half_precision
from tl_codegen_cpu.passes.lower_parallel_loops import lower_parallel_loops
from tl_codegen_cpu.passes.mark_independent_loops import iterations_are_independent
from tl_codegen_cpu.passes.reject_gpu_ops import find_gpu_only
from tl_ir.launch import LOOP_KIND_KEY

I = tirx.Var("i", "int32")  # noqa: E741 - the loop index
A = tirx.decl_buffer((16,), "float32", name="A")
B = tirx.decl_buffer((16,), "float32", name="B")
H = tirx.decl_buffer((16,), "float16", name="H")
ZERO = tirx.const(0.0, "float32")


def _parallel(body: tirx.Stmt) -> tirx.For:
    return tirx.For(I, 0, 16, tirx.ForKind.SERIAL, body, annotations={LOOP_KIND_KEY: "parallel"})


def _kind(stmt: tirx.Stmt) -> tirx.ForKind:
    loops: list[tirx.For] = []
    tvm_ffi.structural_walk(stmt, (tirx.For, loops.append), order="post")
    return loops[0].kind


def test_a_parallel_select_is_vectorized() -> None:
    """A lane-wise select vectorizes (blend instructions beat a branch per element)."""
    load = tirx.BufferLoad(A, [I])
    select = tirx.BufferStore(B, tirx.if_then_else(load > ZERO, load, ZERO), [I])
    assert _kind(lower_parallel_loops(_parallel(select), 16)) == tirx.ForKind.VECTORIZED


@pytest.mark.parametrize("call_op", ["tirx.call_extern", "tirx.tvm_call_packed"])
def test_a_parallel_opaque_call_stays_serial(call_op: str) -> None:
    call = tirx.call_intrin("float32", call_op, "f", tirx.BufferLoad(A, [I]))
    body = tirx.BufferStore(B, call, [I])
    assert _kind(lower_parallel_loops(_parallel(body), 16)) == tirx.ForKind.SERIAL


def _calls(stmt: tirx.Stmt) -> list[tvm.ir.Call]:
    calls: list[tvm.ir.Call] = []
    tvm_ffi.structural_walk(stmt, (tvm.ir.Call, calls.append), order="post")
    return calls


def test_half_precision_ceil_is_computed_in_float32() -> None:
    """``prim.ceil`` is a math intrinsic like ``tirx.exp``: widened."""
    store = tirx.BufferStore(H, tirx.ceil(tirx.BufferLoad(H, [I])), [I])
    (ceil,) = _calls(legalize_half_precision(store, ("float16",)))
    assert str(ceil.op.name) == "prim.ceil"
    assert str(ceil.ty.dtype) == "float32"


def test_half_precision_select_keeps_its_type() -> None:
    load = tirx.BufferLoad(H, [I])
    zero = tirx.const(0.0, "float16")
    store = tirx.BufferStore(H, tirx.if_then_else(load > zero, load, zero), [I])
    (select,) = _calls(legalize_half_precision(store, ("float16",)))
    assert str(select.ty.dtype) == "float16"


def test_a_vector_loop_with_a_select_is_independent() -> None:
    load = tirx.BufferLoad(A, [I])
    body = tirx.BufferStore(B, tirx.if_then_else(load > ZERO, tirx.ceil(load), ZERO), [I])
    loop = tirx.For(I, 0, 16, tirx.ForKind.VECTORIZED, body)
    assert iterations_are_independent(loop, [A, B])


def test_ptx_async_copy_builtins_are_refused_on_cpu() -> None:
    commit = tirx.Evaluate(tirx.call_intrin("void", "tirx.ptx.cp_async_commit_group"))
    assert find_gpu_only(commit) == ["T.async_copy (tirx.ptx.cp_async_commit_group)"]
