"""Views of a buffer's memory under another shape or dtype: ``T.Tensor(shape, dtype,
data)``, ``T.reshape`` and ``T.view``.

A view is a ``DeclBuffer`` whose data is the source buffer's (``tirx.buffer_data``):
no copy, writes through the view change the source. The view must cover exactly the
source's bytes.
"""

from __future__ import annotations

from typing import Any

from tvm import tirx
from tvm.script.ir_builder import tirx as _IB
from tvm.sym import Analyzer as _Analyzer

from tl_ir import ops as _ops
from tl_ir.dtypes import bits as _dtype_bits
from tl_ir.dtypes import normalize_dtype as _normalize_dtype
from tl_ir.errors import KernelTypeError, ScopeError, ShapeMismatchError
from tl_ir.frontend import current_state as _current_state
from tl_ir.language._operands import check_shape

__all__ = ["make_view", "reshape", "view"]


def _source_buffer(data: Any, where: str) -> Any:
    """The buffer whose memory ``data`` is: a buffer, or ``buffer.data``."""
    if _ops.is_buffer(data):
        return data
    source = _ops.data_buffer(data)
    if source is not None:
        return source
    raise KernelTypeError(f"{where}: expected a buffer or its .data, got {data!r}")


def _total_bits(shape: Any, dtype: str) -> Any:
    total: Any = _dtype_bits(dtype)
    for dim in shape:
        total = total * dim
    return total


def make_view(shape: Any, dtype: Any, data: Any, where: str) -> Any:
    """A buffer of ``shape`` and ``dtype`` over the memory of the buffer ``data`` is
    (or the buffer itself).

    Raises:
        ScopeError: outside a ``@T.prim_func`` body.
        KernelTypeError: ``data`` is not a buffer or its ``.data``; a bad shape.
        ShapeMismatchError: the view does not cover exactly the source's bytes.
    """
    if _current_state() is None:
        raise ScopeError(f"{where} is only allowed inside a @T.prim_func body")
    source = _source_buffer(data, where)
    dims = check_shape(shape, where)
    name = _normalize_dtype(dtype)
    source_shape = tuple(source.ty.shape)
    source_dtype = str(source.ty.dtype)
    want, have = _total_bits(dims, name), _total_bits(source_shape, source_dtype)
    same = _ops.const_int(want) == _ops.const_int(have) and _ops.const_int(want) is not None
    if not same and not _Analyzer().can_prove_equal(tirx.const(0, "int64") + want, have):
        raise ShapeMismatchError(
            f"{where}: a view must cover its source exactly: {source.name} is "
            f"{tuple(str(d) for d in source_shape)} {source_dtype}, the view "
            f"{tuple(str(d) for d in dims)} {name}"
        )
    return _IB.decl_buffer(dims, name, data=tirx.buffer_data(source))


def reshape(src: Any, shape: Any) -> Any:
    """``src``'s memory under a new ``shape`` (same dtype, same number of elements)."""
    if not _ops.is_buffer(src):
        raise KernelTypeError(f"T.reshape(src, shape): expected a buffer, got {src!r}")
    return make_view(shape, str(src.ty.dtype), src, "T.reshape(src, shape)")


def view(src: Any, shape: Any = None, dtype: Any = None) -> Any:
    """``src``'s memory as ``shape`` and ``dtype`` (each defaults to ``src``'s); the
    view covers the same bytes."""
    if not _ops.is_buffer(src):
        raise KernelTypeError(f"T.view(src, shape, dtype): expected a buffer, got {src!r}")
    return make_view(
        tuple(src.ty.shape) if shape is None else shape,
        str(src.ty.dtype) if dtype is None else dtype,
        src,
        "T.view(src, shape, dtype)",
    )
