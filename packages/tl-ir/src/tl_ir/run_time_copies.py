"""Tile copies whose extent is a run-time value bounded by the other tile.

TileLang programs copy a run-time number of rows into a fixed tile:
``T.copy(KV[kv_start:kv_end, :], KV_shared)`` where ``kv_end - kv_start`` is known
only when the kernel runs and is at most the shared tile's ``block_N`` rows. The
backends need tile-op extents that are integers, so after parsing (and after
`tl_ir.region_extents` has made every provably constant extent an integer) each
``T.copy`` with a run-time extent whose other side is a compile-time extent becomes
an element-parallel loop over the compile-time extent, guarded by the run-time one:

    for i, j in T.Parallel(block_N, D):      # the constant side's extents
        if i < kv_end - kv_start:             # the run-time extent
            KV_shared[i, j] = KV[kv_start + i, j]

It keeps ``T.copy``'s meaning: elements of the source tile outside the source
buffer read as zero, elements outside the destination buffer are not written, and
the rest of the destination tile is left as it was. Every target lowers it like any
``T.Parallel`` loop. A copy whose paired extents are both run-time values is left to
the target (which refuses it with the reason).
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir import ops as _ops
from tl_ir.launch import LOOP_KIND_KEY

__all__ = ["expand_run_time_copies"]


def _non_unit_dims(region: _ops.Region) -> list[int]:
    return [d for d, e in enumerate(region.extents) if _ops.const_int(e) != 1]


def _inside(buffer: Any, index: list[Any]) -> Any:
    conditions = [
        tirx.all(i >= 0, i < extent) for i, extent in zip(index, buffer.ty.shape, strict=True)
    ]
    return tirx.all(*conditions) if len(conditions) > 1 else conditions[0]


def _zero(dtype: str) -> Any:
    return tirx.const(False if dtype == "bool" else 0, dtype)


def _loop_plan(src: _ops.Region, dst: _ops.Region) -> list[tuple[int, int, int, Any]] | None:
    """``(src_dim, dst_dim, bound, run-time extent or None)`` per paired non-unit dim,
    or None when the copy needs no expansion or cannot be expanded."""
    s_dims, d_dims = _non_unit_dims(src), _non_unit_dims(dst)
    if len(s_dims) != len(d_dims):
        return None
    plan: list[tuple[int, int, int, Any]] = []
    dynamic = False
    for s_dim, d_dim in zip(s_dims, d_dims, strict=True):
        s_ext, d_ext = src.extents[s_dim], dst.extents[d_dim]
        s_const, d_const = _ops.const_int(s_ext), _ops.const_int(d_ext)
        if s_const is not None and d_const is not None:
            if s_const != d_const:
                return None  # the tile op's own check reports it
            plan.append((s_dim, d_dim, s_const, None))
        elif s_const is not None:
            plan.append((s_dim, d_dim, s_const, d_ext))
            dynamic = True
        elif d_const is not None:
            plan.append((s_dim, d_dim, d_const, s_ext))
            dynamic = True
        else:
            return None
    return plan if dynamic else None


def _expand(copy: _ops.CopyOp, plan: list[tuple[int, int, int, Any]]) -> Any:
    src, dst = copy.src, copy.dst
    ivs = [tirx.Var(f"copy_i{k}", "int32") for k in range(len(plan))]
    s_index, d_index = list(src.mins), list(dst.mins)
    guards: list[Any] = []
    for iv, (s_dim, d_dim, _, run_time) in zip(ivs, plan, strict=True):
        s_index[s_dim] = s_index[s_dim] + iv
        d_index[d_dim] = d_index[d_dim] + iv
        if run_time is not None:
            guards.append(iv < run_time)
    load = tirx.BufferLoad(src.buffer, s_index)
    if str(load.dtype) != dst.dtype:
        load = tirx.Cast(dst.dtype, load)
    value = tirx.if_then_else(_inside(src.buffer, s_index), load, _zero(dst.dtype))
    store = tirx.BufferStore(dst.buffer, value, d_index)
    condition = tirx.all(*guards, _inside(dst.buffer, d_index))
    body: Any = tirx.IfThenElse(condition, store, None)
    annotations = {LOOP_KIND_KEY: "parallel"}
    for iv, (_, _, bound, _) in reversed(list(zip(ivs, plan, strict=True))):
        body = tirx.For(
            iv,
            tirx.IntImm("int32", 0),
            tirx.IntImm("int32", bound),
            tirx.ForKind.SERIAL,
            body,
            None,
            annotations,
        )
    return body


def expand_run_time_copies(body: Any) -> Any:
    """``body`` with every ``T.copy`` whose extent is a run-time value bounded by the
    other tile's compile-time extent written as a guarded element-parallel loop (the
    module docstring); other statements unchanged."""

    def rewrite(statement: Any) -> Any:
        call = statement.value
        if not (isinstance(call, tvm.ir.Call) and str(getattr(call.op, "name", "")) == "tl.copy"):
            return statement
        copy = _ops.describe(call)
        assert isinstance(copy, _ops.CopyOp)
        plan = _loop_plan(copy.src, copy.dst)
        if plan is None:
            return statement
        return _expand(copy, plan)

    return tvm_ffi.structural_map(body, (tirx.Evaluate, rewrite), order="post")
