"""``T.annotate_safe_value``: the value a tile copy reads outside a buffer.

TileLang's meaning: ``T.annotate_safe_value({A: v})`` makes every ``T.copy`` out of ``A``
write ``v`` (cast to the destination's dtype) where the source tile hangs over ``A``'s
edge, instead of the default. A copy out of an annotated buffer is written here as an
element-parallel loop whose loads are guarded by ``A``'s bounds (and whose stores by the
destination's), so every target lowers it like any ``T.Parallel`` loop and means the same.
"""

from __future__ import annotations

from typing import Any

from tvm import tirx
from tvm.script.ir_builder import tirx as _IB

from tl_ir import ops as _ops
from tl_ir.errors import KernelTypeError, ScopeError, ShapeMismatchError
from tl_ir.frontend import current_state as _current_state
from tl_ir.language._operands import as_value, fmt_extents
from tl_ir.ops import Region

__all__ = ["annotate_safe_value", "safe_copy", "safe_value_of"]


def annotate_safe_value(safe_value_map: dict[Any, Any]) -> None:
    """Record ``{buffer: value}``: tile copies out of ``buffer`` that follow in this
    kernel read ``value`` where their tile lies outside the buffer.

    Raises:
        KernelTypeError: not a dict, a key that is not a buffer, a value that is not a
            scalar or scalar expression.
        ScopeError: outside a ``@T.prim_func`` body.
    """
    if not isinstance(safe_value_map, dict):
        raise KernelTypeError(
            f"T.annotate_safe_value: expected a dict {{buffer: value}}, got {safe_value_map!r}"
        )
    state = _current_state()
    if state is None:
        raise ScopeError("T.annotate_safe_value is only allowed inside a @T.prim_func body")
    for buffer, value in safe_value_map.items():
        if not _ops.is_buffer(buffer):
            raise KernelTypeError(f"T.annotate_safe_value: expected buffer keys, got {buffer!r}")
        try:
            expr = as_value(value, str(buffer.ty.dtype))
        except KernelTypeError:
            raise KernelTypeError(
                f"T.annotate_safe_value: the value for {buffer.name} must be a scalar or a "
                f"scalar expression, got {value!r}"
            ) from None
        state.safe_values = [(b, v) for b, v in state.safe_values if not b.same_as(buffer)]
        state.safe_values.append((buffer, expr))
        record = [(b, v) for b, v in state.safe_value_record if not b.same_as(buffer)]
        state.safe_value_record = [*record, (buffer, expr)]


def safe_value_of(buffer: Any) -> Any:
    """The safe value annotated for ``buffer`` in the kernel being parsed, or None."""
    state = _current_state()
    for known, value in state.safe_values if state is not None else ():
        if known.same_as(buffer):
            return value
    return None


def _inside(buffer: Any, index: list[Any]) -> Any:
    conditions = [
        tirx.all(i >= 0, i < extent) for i, extent in zip(index, buffer.ty.shape, strict=True)
    ]
    return tirx.all(*conditions) if len(conditions) > 1 else conditions[0]


def safe_copy(src: Region, dst: Region, safe_value: Any) -> None:
    """Emit ``dst = src`` element by element, ``safe_value`` where ``src``'s tile lies
    outside its buffer; elements outside ``dst``'s buffer are not written.

    Raises:
        ShapeMismatchError: the tiles' non-unit extents differ in number.
    """
    s_dims = [d for d, e in enumerate(src.extents) if _ops.const_int(e) != 1]
    d_dims = [d for d, e in enumerate(dst.extents) if _ops.const_int(e) != 1]
    if len(s_dims) != len(d_dims):
        raise ShapeMismatchError(
            f"T.copy(src, dst): with a safe value for {src.buffer.name} the tiles must have "
            f"the same non-unit extents: {fmt_extents(src.extents)} vs "
            f"{fmt_extents(dst.extents)}"
        )
    fallback = as_value(safe_value, dst.dtype)

    def body(ivs: list[Any]) -> None:
        s_index = list(src.mins)
        d_index = list(dst.mins)
        for iv, s_dim, d_dim in zip(ivs, s_dims, d_dims, strict=True):
            s_index[s_dim] = s_index[s_dim] + iv
            d_index[d_dim] = d_index[d_dim] + iv
        value = tirx.if_then_else(
            _inside(src.buffer, s_index),
            as_value(tirx.BufferLoad(src.buffer, s_index), dst.dtype),
            fallback,
        )
        with _IB.If(_inside(dst.buffer, d_index)), _IB.Then():
            _IB.buffer_store(dst.buffer, value, d_index)

    extents = [src.extents[d] for d in s_dims]
    if not extents:
        body([])
        return
    from tl_ir.language._loops import Parallel, serial

    if all(_ops.const_int(e) is not None for e in extents):
        with Parallel(*extents) as ivs:
            body([ivs] if isinstance(ivs, tirx.Var) else list(ivs))
        return
    # A run-time tile extent: sequential loops (T.Parallel needs constant extents).
    _nest(extents, [], body, serial)


def _nest(extents: list[Any], ivs: list[Any], body: Any, serial: Any) -> None:
    if not extents:
        body(ivs)
        return
    with serial(extents[0]) as iv:
        _nest(extents[1:], [*ivs, iv], body, serial)
