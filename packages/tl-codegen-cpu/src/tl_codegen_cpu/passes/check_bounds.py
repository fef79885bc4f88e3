"""`cpu-check-bounds`: the checked mode's bounds checks (only when checked mode is on).

Checked mode is asked for with TVM's own pass-config switch
``tirx.instrument_bound_checkers`` (``tl_jit.jit(..., debug=True)`` and ``TL_DEBUG=1``
set it; it is part of the kernel's key like every pass config). Off, this pass changes
nothing, so the generated code is the same as without it.

On, every element access of a buffer with a known shape is guarded, dimension by
dimension: ``0 <= index < extent``. An access that fails its guard does not touch
memory (a load gives 0, a store is skipped) and calls the runtime's
``tl_rt_report_out_of_bounds(name words, dim, index, extent, line)``, which keeps the
first report; the caller (tl_jit) turns it into an ``IndexError`` after the call. The
kernel goes on rather than returning: a parallel region cannot return early. Vectorized
loops become serial loops (a guard with a call cannot be vectorized); accesses whose
index is a vector other than a ramp or broadcast (none in code this backend generates
from kernels) are left unchecked.

The location is the line of the access's own source span: accesses written in the
kernel carry one; accesses the compiler generated (a lowered ``T.copy``) report line 0.
The buffer's name travels packed in int64 words (`tl_runtime.context.pack_name`):
TVM's C printer cannot pass a string constant to a call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir.launch import rebuild_loop
from tl_passes.pass_base import PassContext, PrimFuncPass
from tl_runtime.context import pack_name

CHECK_CONFIG = "tirx.instrument_bound_checkers"
"""The pass-config key that turns checked mode on (TVM's own, registered, boolean)."""
REPORT_FUNCTION = "tl_rt_report_out_of_bounds"
"""The runtime function a failed guard calls (tl-runtime's context helper defines it)."""


def checked_mode_requested() -> bool:
    """Whether the current TVM pass context asks for bounds checks."""
    config = tvm.transform.PassContext.current().config
    return CHECK_CONFIG in config and bool(config[CHECK_CONFIG])


def _span_line(node: Any) -> int:
    span = getattr(node, "span", None)
    return 0 if span is None else int(span.line)


def _scalar_bounds(index: Any) -> tuple[Any, Any] | None:
    """(lowest, highest) scalar index an index expression reaches, or None if unknown."""
    if isinstance(index, tirx.Ramp):
        last = index.base + index.stride * (int(index.lanes) - 1)
        return index.base, last
    if isinstance(index, tirx.Broadcast):
        return index.value, index.value
    if "x" in str(index.ty.dtype):  # another vector expression
        return None
    return index, index


class _Instrument:
    def guards(self, buffer: Any, indices: Any, node: Any) -> tuple[Any, Any] | None:
        """(all-in-bounds condition, the report expression for the first failing dim)."""
        shape = list(getattr(buffer, "shape", None) or [])
        if not shape or len(shape) != len(indices):
            return None
        line = tirx.const(_span_line(node), "int32")
        name_words = [tirx.const(word, "int64") for word in pack_name(str(buffer.name))]
        checks: list[tuple[Any, Any]] = []
        for dim, (index, extent) in enumerate(zip(indices, shape, strict=True)):
            bounds = _scalar_bounds(index)
            if bounds is None:
                return None
            low = tirx.Cast("int64", bounds[0])
            high = tirx.Cast("int64", bounds[1])
            wide_extent = tirx.Cast("int64", extent)
            inside = tirx.all(low >= tirx.const(0, "int64"), high < wide_extent)
            offending = tirx.Select(low < tirx.const(0, "int64"), low, high)
            report = tirx.call_extern(
                "int32",
                REPORT_FUNCTION,
                *name_words,
                tirx.const(dim, "int32"),
                offending,
                wide_extent,
                line,
            )
            checks.append((inside, report))
        condition = tirx.all(*[inside for inside, _ in checks])
        # the first failing dimension reports: ok0 ? (ok1 ? ... : r1) : r0
        report_expr = checks[-1][1]
        for inside, report in reversed(checks[:-1]):
            report_expr = tirx.if_then_else(inside, report_expr, report)
        return condition, report_expr

    @staticmethod
    def address_statement(stmt: Any) -> Any:
        """An ``Evaluate`` taking ``address_of`` of a guarded load (an atomic onto
        ``A[i]``: an address needs the load itself) takes the address of the load and
        runs only when its guard holds; else it reports instead."""
        guards: list[tuple[Any, Any]] = []

        def unwrap(call: Any) -> Any:
            if not (isinstance(call.op, tvm.ir.Op) and str(call.op.name) == "tirx.address_of"):
                return call
            (arg,) = call.args
            guarded = isinstance(arg, tvm.ir.Call) and str(getattr(arg.op, "name", "")) == (
                "prim.if_then_else"
            )
            if not guarded or not isinstance(arg.args[1], tvm.ir.TensorLoad):
                return call
            condition, load, report = arg.args
            guards.append((condition, report.value if isinstance(report, tirx.Cast) else report))
            return tirx.address_of(load)

        value = tvm_ffi.structural_map(stmt.value, (tvm.ir.Call, unwrap), order="post")
        if not guards:
            return stmt
        condition = tirx.all(*[inside for inside, _ in guards])
        report = guards[-1][1]
        for inside, earlier in reversed(guards[:-1]):
            report = tirx.if_then_else(inside, report, earlier)
        return tirx.IfThenElse(condition, tirx.Evaluate(value), tirx.Evaluate(report))

    def load(self, load: Any) -> Any:
        dtype = str(load.ty.dtype)
        if "x" in dtype:  # a vector load (a generated micro-kernel's): not checked
            return load
        guards = self.guards(load.source, list(load.indices), load)
        if guards is None:
            return load
        condition, report = guards
        return tirx.if_then_else(condition, load, tirx.Cast(dtype, report))

    def store(self, store: Any) -> Any:
        guards = self.guards(store.buffer, list(store.indices), store)
        if guards is None:
            return store
        condition, report = guards
        return tirx.IfThenElse(condition, store, tirx.Evaluate(report))

    def loop(self, loop: Any) -> Any:
        if loop.kind != tirx.ForKind.VECTORIZED:
            return loop
        return rebuild_loop(loop, kind=tirx.ForKind.SERIAL)


def instrument_bounds(body: tirx.Stmt) -> tirx.Stmt:
    """``body`` with every element access guarded (see the module docstring)."""
    instrument = _Instrument()
    body = tvm_ffi.structural_map(body, (tvm.ir.TensorLoad, instrument.load), order="post")
    body = tvm_ffi.structural_map(body, (tirx.Evaluate, instrument.address_statement), order="post")
    body = tvm_ffi.structural_map(body, (tirx.BufferStore, instrument.store), order="post")
    result: tirx.Stmt = tvm_ffi.structural_map(body, (tirx.For, instrument.loop), order="post")
    return result


@dataclass(frozen=True)
class CpuCheckBoundsPass(PrimFuncPass):
    """Guard every element access when checked mode is on (`CHECK_CONFIG`); else nothing."""

    name: ClassVar[str] = "cpu-check-bounds"

    def applies_to(self, ctx: PassContext) -> bool:
        """Return whether the current pass context asks for checked mode."""
        return checked_mode_requested()

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` with its accesses guarded."""
        return instrument_bounds(body)
