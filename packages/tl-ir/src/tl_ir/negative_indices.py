"""Negative element indices count from the end of their dim, as in Python.

TileLang programs write ``A[-1]`` for the last element and ``A[-i - 1]`` to walk a
buffer backwards; TileLang rewrites every index it can prove negative to
``extent + index``. Here, as there, an element index (of a load or a store, per dim)
is rewritten when TVM's analyzer, knowing the ranges of the loops and thread/block
indices around it, proves it negative; a vector index (``T.Ramp(t - 2, 1, 4)``)
whose lanes may be of either sign wraps lane by lane (``lane < 0 ? extent + lane :
lane``). An index whose sign is known only at run time is left alone, as TileLang
leaves it: the kernel reads what that index addresses. Constant indices outside
``[-extent, extent)`` are refused when the kernel is built (`tl_ir.bounds`).

Tile operands (``T.copy(A[-4:], ...)``) are regions, not element indices; they are
not rewritten. The one-element operand of an atomic (``T.atomic_add(B[i - 6], v)``)
is an element access and is.
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir import ops as _ops
from tl_ir.index_ranges import proves as _proves
from tl_ir.index_ranges import range_analyzer

__all__ = ["wrap_negative_indices"]


def _wrapped(analyzer: Any, index: Any, extent: Any) -> Any:
    """``index`` (a scalar, a Ramp or a Broadcast), wrapped as the module says, or
    ``index`` itself when it cannot be negative or its sign is unknown."""
    lanes = int(tvm.DataType(str(index.dtype)).lanes)
    index_type = str(tvm.DataType(str(index.dtype)).with_lanes(1))
    bound = tirx.Cast(index_type, extent) if str(extent.dtype) != index_type else extent
    if lanes == 1:
        if _proves(analyzer, index < 0):
            return analyzer.simplify(bound + index)
        return index
    if isinstance(index, tirx.Broadcast):
        inner = _wrapped(analyzer, index.value, extent)
        return index if inner.same_as(index.value) else tirx.Broadcast(inner, index.lanes)
    if not isinstance(index, tirx.Ramp):
        return index
    first, step = index.base, index.stride
    last = first + step * (lanes - 1)
    if _proves(analyzer, tvm.tirx.all(first >= 0, last >= 0)):
        return index
    if _proves(analyzer, tvm.tirx.all(first < 0, last < 0)):
        return tirx.Ramp(analyzer.simplify(bound + first), step, index.lanes)
    zero = tirx.Broadcast(tirx.const(0, index_type), lanes)
    return tirx.Select(index < zero, tirx.Broadcast(bound, lanes) + index, index)


def _wrap_all(analyzer: Any, buffer: Any, indices: Any) -> list[Any] | None:
    ty = getattr(buffer, "ty", None)
    if not isinstance(ty, tirx.BufferType):
        return None
    shape = list(ty.shape)
    if len(shape) != len(indices):
        return None
    new = [_wrapped(analyzer, index, extent) for index, extent in zip(indices, shape, strict=True)]
    if all(a.same_as(b) for a, b in zip(new, indices, strict=True)):
        return None
    return new


def _is_one_element_region(arg: Any) -> bool:
    return _ops.is_region_call(arg) and all(_ops.const_int(e) == 1 for e in arg.args[2:])


def wrap_negative_indices(body: Any) -> Any:
    """``body`` with every element index proved negative counted from its dim's end.

    Args:
        body: a kernel body as `tl_ir.language` builds it.

    Returns:
        the body, rewritten where an index is negative (the same object otherwise).
    """
    analyzer = range_analyzer(body)
    anchors: list[Any] = []
    elements: list[Any] = []

    def visit_call(call: Any) -> None:
        if not isinstance(call.op, tvm.ir.Op):
            return
        name = str(call.op.name)
        if name == "tl.region":
            anchors.append(call.args[0])
        elif name.startswith("tl.atomic"):
            # An atomic's one-element operand is an element access (A[-1] is the last
            # element), not a tile anchor.
            elements.extend(arg.args[0] for arg in call.args if _is_one_element_region(arg))

    tvm_ffi.structural_walk(body, [(tvm.ir.Call, visit_call)])
    anchors = [a for a in anchors if not any(a.same_as(e) for e in elements)]

    def rewrite_load(load: Any) -> Any:
        if any(anchor.same_as(load) for anchor in anchors):
            return load
        indices = _wrap_all(analyzer, load.source, load.indices)
        if indices is None:
            return load
        return tirx.BufferLoad(load.source, indices, span=load.span)  # keeps its line

    def rewrite_store(store: Any) -> Any:
        indices = _wrap_all(analyzer, store.buffer, store.indices)
        if indices is None:
            return store
        return tirx.BufferStore(store.buffer, store.value, indices, span=store.span)

    body = tvm_ffi.structural_map(body, (tvm.ir.TensorLoad, rewrite_load), order="post")
    return tvm_ffi.structural_map(body, (tirx.BufferStore, rewrite_store), order="post")
