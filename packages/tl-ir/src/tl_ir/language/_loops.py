"""Tile loops: ``T.serial``, ``T.unroll``, ``T.vectorized``, ``T.Parallel``, ``T.Pipelined``.

Each loop carries ``{"tl.loop_kind": kind}`` (``T.Pipelined`` adds ``"num_stages"``).
"""

from __future__ import annotations

import builtins as _builtins
from typing import Any

import tvm
from tvm.script.ir_builder import tirx as _IB

from tl_ir import ops as _ops
from tl_ir.errors import KernelTypeError, KernelValueError, ScopeError
from tl_ir.frontend import current_state as _current_state
from tl_ir.language._dynamic_parallel import check_bounded_now
from tl_ir.launch import LOOP_KIND_KEY as _LOOP_KIND_KEY
from tl_ir.launch import NUM_STAGES_KEY as _NUM_STAGES_KEY
from tl_ir.launch import PIPELINE_GROUP_KEY, PIPELINE_ORDER_KEY, PIPELINE_STAGE_KEY

__all__ = ["Parallel", "Pipelined", "grid", "serial", "unroll", "vectorized"]


def _loop_annotations(kind: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    annotations: dict[str, Any] = {_LOOP_KIND_KEY: kind}
    if extra:
        annotations.update(extra)
    return annotations


def _integer_bound(value: Any, where: str, name: str) -> Any:
    """``value`` (a loop bound) as an int or an integer kernel expression.

    Raises:
        KernelTypeError: anything else: ``None`` (TVM's builder crashed the process
            on it), a float (truncated, 7.9 ran 7 iterations), a bool.
    """
    value = _ops.exact_int(value)
    if isinstance(value, int) and not isinstance(value, _builtins.bool):
        return value
    if (
        tvm.ir.is_prim_expr(value)
        and "int" in str(value.ty.dtype)
        and "x" not in str(value.ty.dtype)
    ):
        return value
    raise KernelTypeError(f"{where}: {name} must be an integer, got {value!r}")


def _bounds(start: Any, stop: Any, step: Any, where: str) -> tuple[Any, Any, Any]:
    start = _integer_bound(start, where, "start" if stop is not None else "the extent")
    if stop is not None:
        stop = _integer_bound(stop, where, "stop")
    step = _ops.exact_int(step)
    if step is not None:
        constant = _ops.const_int(step)
        if isinstance(step, bool) or (constant is None and not tvm.ir.is_prim_expr(step)):
            raise KernelTypeError(f"{where}: expected an integer step, got {step!r}")
        if constant is None:
            raise KernelTypeError(
                f"{where}: expected a constant step, got the run-time value {step}; loop "
                "over range(ceildiv(stop - start, step)) and compute start + k * step"
            )
        if constant == 0:
            raise KernelTypeError(f"{where}: expected a nonzero step, got 0")
    return start, stop, step


def grid(*extents: Any) -> Any:
    """``for i, j in T.grid(M, N)``: nested sequential loops, one per extent.

    Raises:
        KernelTypeError: no extent, or an extent that is not an integer.
    """
    if not extents:
        raise KernelTypeError("T.grid(*extents): expected at least one extent")
    checked = [
        _integer_bound(extent, "T.grid(*extents)", f"extent {position}")
        for position, extent in enumerate(extents)
    ]
    return _IB.grid(*checked)


def serial(start: Any, stop: Any = None, step: Any = None, *, annotations: Any = None) -> Any:
    """``for i in T.serial(n)`` / ``T.serial(start, stop, step)``: a sequential loop.

    Raises:
        KernelTypeError: a step that is not a nonzero constant int (a negative one
            counts down, as Python's ``range``).
    """
    start, stop, step = _bounds(start, stop, step, "T.serial(start, stop, step)")
    return _IB.serial(start, stop, step=step, annotations=_loop_annotations("serial", annotations))


def unroll(
    start: Any,
    stop: Any = None,
    step: Any = None,
    *,
    explicit: bool = False,
    unroll_factor: Any = None,
    annotations: Any = None,
) -> Any:
    """``for i in T.unroll(n)``: a loop the compiler unrolls (step as `serial`).

    Unrolling is a hint: a loop whose trip count is only known at run time is a
    `serial` loop (TVM cannot unroll it and failed with an internal error).
    ``explicit`` and ``unroll_factor`` (TileLang's hints) are accepted and checked.

    Raises:
        KernelTypeError: a step that is not a nonzero constant int; an ``unroll_factor``
            that is not a positive int, or given with ``explicit``.
    """
    where = "T.unroll(start, stop, step)"
    start, stop, step = _bounds(start, stop, step, where)
    if unroll_factor is not None:
        factor = _ops.const_int(unroll_factor)
        if isinstance(unroll_factor, bool) or factor is None or factor < 1:
            raise KernelTypeError(
                f"{where}: expected unroll_factor to be a positive int, got {unroll_factor!r}"
            )
        if explicit:
            raise KernelTypeError(
                f"{where}: explicit=True and unroll_factor are exclusive (an explicit "
                "unroll is a full one)"
            )
    first = start if stop is not None else 0
    last = stop if stop is not None else start
    if _ops.const_int(first) is None or _ops.const_int(last) is None:
        return _IB.serial(
            start, stop, step=step, annotations=_loop_annotations("serial", annotations)
        )
    return _IB.unroll(start, stop, step=step, annotations=_loop_annotations("unroll", annotations))


def vectorized(start: Any, stop: Any = None, step: Any = None, *, annotations: Any = None) -> Any:
    """``for i in T.vectorized(n)``: a loop turned into vector operations (step as
    `serial`)."""
    start, stop, step = _bounds(start, stop, step, "T.vectorized(start, stop, step)")
    return _IB.vectorized(
        start, stop, step=step, annotations=_loop_annotations("vectorized", annotations)
    )


def Parallel(*extents: Any) -> Any:
    """``for i, j in T.Parallel(M, N)``: element-parallel loops over a tile, distributed
    across threads (GPU) or lanes and cores (CPU).

    An extent is a compile-time constant, or a run-time value with a compile-time upper
    bound (``T.min(n, 512)``, or a scalar bound to one): the loop then covers the bound
    and its body runs for the indices below the run-time extent.

    Raises:
        KernelTypeError: no extent; a run-time extent without an upper bound (when the
            kernel is finished).
    """
    if not extents:
        raise KernelTypeError("T.Parallel(*extents): expected at least one extent")
    extents = tuple(_ops.exact_int(extent) for extent in extents)
    dynamic = []
    for position, extent in enumerate(extents):
        if _ops.const_int(extent) is None:
            if not tvm.ir.is_prim_expr(extent) or "int" not in str(extent.dtype):
                raise KernelTypeError(
                    f"T.Parallel(*extents): extent {position} must be an integer, got {extent!r}"
                )
            check_bounded_now(extent)
            dynamic.append(position)
    annotations = _loop_annotations("parallel")
    state = _current_state()
    if len(extents) == 1 and not dynamic:
        return _IB.serial(0, extents[0], annotations=annotations)
    if state is None:
        raise ScopeError("T.Parallel is only allowed inside a @T.prim_func body")
    if len(extents) == 1:
        frame = _IB.serial(0, extents[0], annotations=annotations)
    else:
        frame = _IB.grid(*extents)
        for var in frame.vars:
            state.loop_annotations[var] = annotations
    for position in dynamic:
        state.dynamic_parallel[frame.vars[position]] = extents[position]
    return frame


def _int_list(value: Any, where: str) -> list[int]:
    items = [_ops.exact_int(v) for v in value] if isinstance(value, list | tuple) else None
    if items is None or not all(
        isinstance(v, int) and not isinstance(v, _builtins.bool) for v in items
    ):
        raise KernelTypeError(f"{where}: expected a list of ints, got {value!r}")
    return items


def _int_lists(value: Any, where: str) -> list[list[int]]:
    if not isinstance(value, list | tuple):
        raise KernelTypeError(f"{where}: expected a list of lists of ints, got {value!r}")
    return [_int_list(v, where) for v in value]


_MAX_STAGE = 2**31 - 2
"""The largest stage without ``num_stages``: the depth ``max(stage) + 1`` is an int32
(TileLang reads stages and the depth as C ``int``s)."""


def _check_schedule(orders: list[int], stages: list[int], num_stages: int) -> None:
    """Refuse a manual schedule TileLang refuses or cannot mean: ``order`` entries that
    are negative or repeated (two statements at one emission position), ``stage``
    entries below 0 or past the last stage (``num_stages - 1`` when ``num_stages`` is
    given, else a depth that fits an int32).

    Raises:
        KernelValueError: names the parameter, the entry and what was expected.
    """
    seen: dict[int, int] = {}
    for position, value in enumerate(orders):
        if value < 0:
            raise KernelValueError(
                f"T.Pipelined(order={orders}): expected non-negative emission positions, "
                f"got {value} for statement {position}"
            )
        if value in seen:
            raise KernelValueError(
                f"T.Pipelined(order={orders}): expected each statement at its own emission "
                f"position, got {value} for statements {seen[value]} and {position}"
            )
        seen[value] = position
    last = num_stages - 1 if num_stages > 0 else _MAX_STAGE
    for position, value in enumerate(stages):
        if not 0 <= value <= last:
            depth = (
                f"num_stages={num_stages}"
                if num_stages > 0
                else "no num_stages (the depth max(stage) + 1 is an int32)"
            )
            raise KernelValueError(
                f"T.Pipelined(stage={stages}): expected stages in [0, {last}] with {depth}, "
                f"got {value} for statement {position}"
            )


def Pipelined(
    start: Any,
    stop: Any = None,
    num_stages: int = 0,
    order: Any = None,
    stage: Any = None,
    sync: Any = None,
    group: Any = None,
    annotations: dict[str, Any] | None = None,
) -> Any:
    """``for k in T.Pipelined(n, num_stages=s)``: a loop software-pipelined over ``s``
    stages (copies of later iterations overlap compute of the current one).

    ``order``/``stage`` (one entry per scheduled statement of the body), ``sync`` and
    ``group`` are TileLang's manual pipeline schedule. They are checked; ``order``,
    ``stage`` and ``group`` are recorded on the loop (annotations
    ``tl.pipeline_order``/``tl.pipeline_stage``/``tl.pipeline_group``) for targets that
    pipeline (docs/gpu.md), ``sync`` is a hint. Targets that run the body in program
    order (a legal schedule of any pipeline) give the same results. Without ``num_stages`` the depth is
    ``max(stage) + 1`` as in TileLang (targets that pipeline use it). ``annotations``
    is checked and has no effect.

    Raises:
        KernelTypeError: ``num_stages`` is not a non-negative int; ``order``/``stage``
            are not lists of ints of the same length; ``sync``/``group`` are not lists
            of lists of ints; ``annotations`` is not a dict.
        KernelValueError: an ``order`` entry is negative or repeated (TileLang: "two
            statements cannot have the same order"); a ``stage`` entry is negative, or
            past ``num_stages - 1`` when ``num_stages`` is given (else past an int32
            depth).
    """
    start = _integer_bound(start, "T.Pipelined", "start" if stop is not None else "the extent")
    if stop is not None:
        stop = _integer_bound(stop, "T.Pipelined", "stop")
    num_stages = _ops.exact_int(num_stages)
    if isinstance(num_stages, _builtins.bool) or not isinstance(num_stages, int) or num_stages < 0:
        raise KernelTypeError(
            f"T.Pipelined(num_stages=...): expected a non-negative int, got {num_stages!r}"
        )
    orders = _int_list(order, "T.Pipelined(order=...)") if order is not None else []
    stages = _int_list(stage, "T.Pipelined(stage=...)") if stage is not None else []
    if order is not None and stage is not None and len(orders) != len(stages):
        raise KernelTypeError(
            "T.Pipelined(order=..., stage=...): expected one stage per ordered statement, "
            f"got {len(orders)} order entries and {len(stages)} stage entries"
        )
    _check_schedule(orders, stages, num_stages)
    if sync is not None:
        _int_lists(sync, "T.Pipelined(sync=...)")
    groups = _int_lists(group, "T.Pipelined(group=...)") if group is not None else []
    if annotations is not None and not isinstance(annotations, dict):
        raise KernelTypeError(
            f"T.Pipelined(annotations=...): expected a dict or None, got {annotations!r}"
        )
    if num_stages == 0 and stages:
        num_stages = max(0, max(stages) + 1)
    schedule: dict[str, Any] = {_NUM_STAGES_KEY: num_stages}
    # The manual schedule travels with the loop for the targets that pipeline it.
    if orders:
        schedule[PIPELINE_ORDER_KEY] = orders
    if stages:
        schedule[PIPELINE_STAGE_KEY] = stages
    if groups:
        schedule[PIPELINE_GROUP_KEY] = groups
    return _IB.serial(start, stop, annotations=_loop_annotations("pipelined", schedule))
