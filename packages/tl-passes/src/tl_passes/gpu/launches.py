"""Consecutive ``T.Kernel`` launches in one prim_func: each is lowered as its own kernel.

A prim_func may hold several ``T.Kernel`` blocks that run one after the other
(TileLang's meaning: each is a launch, the next starts when the previous one
has finished). The GPU passes lower each launch on its own (its threads,
fragments, barriers and shared memory) through `map_kernels`; TVM's host/device
split then makes each launch a device kernel that the host calls in program
order. `KERNEL_SHARED_ATTR` records each launch's dynamic shared memory in that
order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tvm_ffi
from tvm import tirx

#: Function attribute: per ``T.Kernel`` in program order, its dynamic shared memory bytes.
KERNEL_SHARED_ATTR = "tl.kernel_dynamic_shared_memory_bytes"


def kernel_functions(func: tirx.PrimFunc) -> list[tuple[Any, tirx.PrimFunc]]:
    """Each ``T.Kernel`` of ``func`` as ``(launch statement, PrimFunc whose body is that
    launch)``, in program order; one pair holding ``func`` itself when it has at most one.
    """
    from tl_ir.launch import kernel_launches

    launches = kernel_launches(func)
    if len(launches) <= 1:
        return [(func.body, func)]
    return [(root, func.with_body(root)) for root, _ in launches]


def replace_kernels(func: tirx.PrimFunc, bodies: list[tuple[Any, Any]]) -> tirx.PrimFunc:
    """``func`` with each launch statement replaced by its new body (pairs from
    `kernel_functions` with the transformed bodies)."""
    if len(bodies) == 1 and bodies[0][0].same_as(func.body):
        return func.with_body(bodies[0][1])

    def replace(stmt: Any) -> Any:
        for root, body in bodies:
            if stmt.same_as(root):
                return body
        return stmt

    return func.with_body(tvm_ffi.structural_map(func.body, (tirx.AttrStmt, replace), order="pre"))


def map_kernels(
    func: tirx.PrimFunc, transform: Callable[[tirx.PrimFunc], tirx.PrimFunc]
) -> tuple[tirx.PrimFunc, list[tirx.PrimFunc]]:
    """Apply ``transform`` to each ``T.Kernel`` of ``func`` as if it were alone.

    Returns:
        ``func`` with every launch replaced by its transformed body, and the
        transformed per-launch PrimFuncs (program order) whose attributes the
        caller combines.
    """
    pieces = kernel_functions(func)
    done = [transform(piece) for _, piece in pieces]
    if len(pieces) == 1:
        return done[0], done
    merged = replace_kernels(
        func, [(root, d.body) for (root, _), d in zip(pieces, done, strict=True)]
    )
    return merged, done
