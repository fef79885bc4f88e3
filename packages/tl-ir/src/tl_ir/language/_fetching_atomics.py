"""``T.atomic_<kind>(..., return_prev=True)``: the atomic that also returns the element's
previous value (`tl_ir.ops.AtomicOp.prev`)."""

from __future__ import annotations

from typing import Any

from tvm import tirx

from tl_ir import ops as _ops
from tl_ir.errors import UnsupportedError
from tl_ir.language._operands import emit_tile_op
from tl_ir.ops import Region
from tl_ir.scopes import LOCAL_VAR

__all__ = ["fetching_atomic"]


def fetching_atomic(kind: str, dst: Region, value: Any) -> Any:
    """Emit the atomic ``kind`` of ``value`` into the element ``dst`` that also stores
    the element's previous value into a fresh thread-private scalar (scope
    ``local.var``, the `AtomicOp.prev` region), and return the load of that scalar:
    the side effect stays a statement in program order, the result a plain load.

    Raises:
        UnsupportedError: called outside a kernel body being built (there is no
            statement to emit, so no previous value).
    """
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as _IB

    if not IRBuilder.is_in_scope():
        raise UnsupportedError(
            f"T.atomic_{kind}(return_prev=True): the previous value exists only inside "
            "a kernel body being built; call it in a @T.prim_func / @tilelang.jit body"
        )
    dtype = str(dst.buffer.ty.dtype)
    prev_buffer = _IB.alloc_buffer((1,), dtype, scope=LOCAL_VAR)
    IRBuilder.name(f"atomic_{kind}_prev", prev_buffer)
    zero = tirx.IntImm("int32", 0)
    one = tirx.IntImm("int32", 1)
    prev = Region(buffer=prev_buffer, mins=(zero,), extents=(one,), access=_ops.ACCESS_WRITE)
    emit_tile_op(f"tl.atomic_{kind}", dst, value, prev)
    return tirx.BufferLoad(prev_buffer, [zero])
