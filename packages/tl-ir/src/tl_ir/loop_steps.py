"""Loops with a negative step become unit-step loops over their trip count.

``for i in range(10, 0, -1)`` (and ``T.serial(9, -1, -3)``) is a TVM ``For`` with
``min = start``, ``extent = stop - start`` and a ``step``. Passes that read a loop as
the range ``[min, min + extent)`` (TVM's and this compiler's) ran a loop with a
negative step zero times: TileLang's ``test_serial_for_with_step`` wrote nothing (an
upward step is read right and stays as written). Here every such loop becomes ``for k
in range(trip)`` with ``i = start + k * step`` substituted in its body, where ``trip =
ceildiv(stop - start, step)`` (0 when the range is empty), as Python's ``range``
counts; the loop keeps its kind, annotations and the user's name for the index.
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir import ops as _ops
from tl_ir.errors import KernelTypeError

__all__ = ["unit_step_loops"]


def _trip_count(extent: Any, step: int) -> Any:
    """``ceildiv(extent, step)``, at least 0 (``len(range(start, start + extent, step))``)."""
    dtype = str(extent.ty.dtype)
    magnitude = tirx.const(abs(step), dtype)
    distance = extent if step > 0 else tirx.const(0, dtype) - extent
    trip = tirx.floordiv(distance + magnitude - tirx.const(1, dtype), magnitude)
    return tvm.sym.Analyzer().simplify(tirx.Max(trip, tirx.const(0, dtype)))


def _unit_step(loop: Any) -> Any:
    step = getattr(loop, "step", None)
    if step is None:
        return loop
    constant = _ops.const_int(step)
    if constant is None or constant >= 0:
        return loop  # an upward step every pass reads; 0 and run-time: refused first
    dtype = str(loop.loop_var.ty.dtype)
    counter = tirx.Var(str(loop.loop_var.name), dtype)
    index = loop.min + counter * tirx.const(constant, dtype)

    def replace(var: Any) -> Any:
        return index if var.same_as(loop.loop_var) else var

    body = tvm_ffi.structural_map(loop.body, (tvm.ir.Var, replace), order="post")
    return tirx.For(
        counter,
        tirx.const(0, dtype),
        _trip_count(loop.extent, constant),
        loop.kind,
        body,
        loop.thread_binding,
        loop.annotations,
    )


def unit_step_loops(body: Any) -> Any:
    """``body`` with every ``For`` whose step is negative rewritten as a unit-step loop
    over its trip count (the module docstring).

    Raises:
        KernelTypeError: a loop whose step is 0 or not a compile-time constant.
    """
    refused: list[Any] = []

    def check(loop: Any) -> None:
        step = getattr(loop, "step", None)
        if step is not None and _ops.const_int(step) in (None, 0):
            refused.append(loop)

    tvm_ffi.structural_walk(body, (tirx.For, check))
    if refused:  # raised here: an error inside the FFI walk would lose its type
        loop = refused[0]
        raise KernelTypeError(
            f"for {loop.loop_var.name} in range(start, stop, step): expected a nonzero "
            f"constant step, got {loop.step}; loop over range(ceildiv(stop - start, step)) "
            "and compute start + k * step"
        )
    return tvm_ffi.structural_map(body, (tirx.For, _unit_step), order="post")
