"""Smaller TileLang names: aliases, index helpers, math variants and target hints.

* ``ceildiv`` (and its other spelling ``cdiv``): integer division rounding up,
  exact for every integer (TVM's adds ``b - 1`` first, which overflows int32 near
  2**31: ``ceildiv(2**31 - 10, 64)`` came out negative and a grid of
  ``ceildiv(N, 256)`` ran no block for ``N`` above ``2**31 - 256``).
* ``Serial``/``Unroll``/``Vectorized``, ``allocate``, ``loop_break``,
  ``KernelLaunchFrame``, ``PrimFunc``, ``get_tvm_dtype``: other spellings of names
  the language has.
* ``__exp``/``__log``... (fast approximate math) compute the exact function, which is
  within any tolerance the fast one promises; ``ieee_*`` with the default
  round-to-nearest rounding are the plain operations; ``fast_rcp`` is ``1 / x``.
* ``annotate_l2_hit_ratio``, ``annotate_min_blocks_per_sm``,
  ``annotate_restrict_buffers``, ``disable_warp_group_reg_alloc``,
  ``no_set_max_nreg``: CUDA scheduling and register-allocation hints, checked loosely
  and accepted as no-ops on every target (a hint never changes results).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tvm
from tvm import tirx
from tvm.script import tirx as _tvm_T
from tvm.script.ir_builder import tirx as _IB

from tl_ir import ops as _ops
from tl_ir.errors import KernelDtypeError, KernelTypeError, KernelValueError, UnsupportedError
from tl_ir.language._dtypes import dtype
from tl_ir.language._launch import Kernel
from tl_ir.language._loops import serial, unroll, vectorized
from tl_ir.language._params import Tensor
from tl_ir.language._tvm_compat import PrimExpr

__all__ = [
    "AnyDType",
    "KernelLaunchFrame",
    "PrimExpr",
    "PrimFunc",
    "Serial",
    "StridedTensor",
    "StringImm",
    "Unroll",
    "Vectorized",
    "align_up",
    "all_of",
    "allocate",
    "annotate_l2_hit_ratio",
    "annotate_min_blocks_per_sm",
    "annotate_restrict_buffers",
    "any_of",
    "cdiv",
    "disable_warp_group_reg_alloc",
    "fast_math",
    "fast_rcp",
    "get_tvm_dtype",
    "ieee_math",
    "index_to_coordinates",
    "loop_break",
    "no_set_max_nreg",
    "pdl_sync",
    "pdl_trigger",
]

Serial = serial
Unroll = unroll
Vectorized = vectorized
KernelLaunchFrame = Kernel
PrimFunc = tirx.PrimFunc
StringImm = tvm.ir.StringImm
allocate = _IB.alloc_buffer
loop_break = _tvm_T.break_loop


def _integer_operand(value: Any, name: str) -> Any:
    value = _ops.exact_int(value)
    if isinstance(value, bool) or not (
        isinstance(value, int) or (tvm.ir.is_prim_expr(value) and "int" in str(value.dtype))
    ):
        raise KernelTypeError(
            f"T.ceildiv(a, b): expected {name} to be an integer or an integer expression, "
            f"got {type(value).__name__} {value!r:.80}"
        )
    if _ops.const_int(value) == 0 and name == "b":
        raise KernelTypeError("T.ceildiv(a, b): expected b to be non-zero, got 0")
    return value


def ceildiv(a: Any, b: Any) -> Any:
    """``ceil(a / b)`` of integers: a Python int when both are ints (computed exactly),
    else an expression none of whose steps leaves the range of ``a`` (TVM's
    ``(a + b - 1) // b`` does near the type's limit): ``(a - 1) // b + 1`` (floor
    division; ``b`` positive), for unsigned ``a`` ``a // b + (a % b + b - 1) // b``, and
    ``-((-a) // b)`` for a negative constant ``b``. Only ``+ - * // %``: a launch grid
    written with it stays an expression the runtime evaluates (docs/deploy.md).

    Raises:
        KernelTypeError: an operand is not an integer or integer expression (a float, a
            bool), or ``b`` is 0.
    """
    a, b = _integer_operand(a, "a"), _integer_operand(b, "b")
    if isinstance(a, int) and isinstance(b, int):
        return -(-a // b)
    constant = _ops.const_int(b)
    if constant is not None and constant < 0:
        return -tirx.floordiv(-a, b)
    dtype = str(a.dtype) if tvm.ir.is_prim_expr(a) else str(b.dtype)
    if dtype.startswith("uint"):
        return tirx.floordiv(a, b) + tirx.floordiv(tirx.floormod(a, b) + b - 1, b)
    return tirx.floordiv(a - 1, b) + 1


cdiv = ceildiv
#: What TileLang accepts where a dtype goes.
AnyDType = str | type | dtype


def get_tvm_dtype(value: Any) -> dtype:
    """``value`` (any dtype-like) as a dtype object (``T.dtype(value)``)."""
    return dtype(value)


def align_up(value: Any, alignment: Any) -> Any:
    """``value`` rounded up to a multiple of ``alignment``."""
    return ceildiv(value, alignment) * alignment


def index_to_coordinates(index: Any, shape: Sequence[Any]) -> list[Any]:
    """The row-major coordinates in ``shape`` of the flat ``index``."""
    if not shape:
        raise KernelTypeError("T.index_to_coordinates(index, shape): expected a non-empty shape")
    coordinates = []
    for extent in reversed(list(shape)):
        constant = _ops.const_int(extent)
        if constant is not None and constant <= 0:
            raise KernelValueError(
                f"T.index_to_coordinates(index, shape): expected positive extents, got {shape!r}"
            )
        coordinates.append(index % extent)
        index = index // extent
    return coordinates[::-1]


class _StridedTensorAnnotation:
    """``T.StridedTensor(shape, strides, dtype)`` / ``T.StridedTensor[shape, strides,
    dtype]``: a tensor parameter with explicit element ``strides`` (one per dim)."""

    def __call__(self, shape: Any, strides: Any, dtype: Any = "float32", scope: Any = None) -> Any:
        if len(tuple(shape)) != len(tuple(strides)):
            raise KernelTypeError(
                f"T.StridedTensor(shape, strides): expected one stride per dim, got shape "
                f"{shape!r} and strides {strides!r}"
            )
        if scope not in (None, "global"):
            raise UnsupportedError(f"T.StridedTensor(scope={scope!r}): only global tensors")
        return Tensor(shape, dtype, strides=tuple(strides))

    def __getitem__(self, item: Any) -> Any:
        if not isinstance(item, tuple) or len(item) not in (2, 3):
            raise KernelTypeError(
                f"T.StridedTensor[shape, strides, dtype]: expected 2 or 3 items, got {item!r}"
            )
        return self(*item)


StridedTensor = _StridedTensorAnnotation()


def fast_math(name: str) -> Any:
    """TileLang's fast ``__<name>`` math: the exact TVM function of the same name."""
    exact = getattr(_tvm_T, name)

    def approximate(x: Any) -> Any:
        dtype = str(getattr(x, "dtype", "float32" if isinstance(x, float) else "int32"))
        if not dtype.startswith(("float", "bfloat")):
            # TVM would build the call and fail inside its code generator.
            raise KernelDtypeError(
                f"T.__{name}: expected a floating-point operand, got {dtype} (cast it, "
                f"e.g. T.__{name}(T.cast(x, 'float32')))"
            )
        return exact(x)

    approximate.__name__ = f"__{name}"
    approximate.__doc__ = f"``T.__{name}(x)``: ``T.{name}(x)`` (exact, within the fast bound)."
    return approximate


def fast_rcp(x: Any) -> Any:
    """Reciprocal ``1 / x`` (exact; TileLang's fast approximation is within its error)."""
    return 1.0 / x


_IEEE_OPS: dict[str, Any] = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "mul": lambda x, y: x * y,
    "fdiv": lambda x, y: x / y,
    "fmaf": lambda x, y, z: x * y + z,
    "frcp": lambda x: 1.0 / x,
    "fsqrt": _tvm_T.sqrt,
    "frsqrt": _tvm_T.rsqrt,
}


#: The operands of each ``ieee_*`` name (the others take one).
_IEEE_ARITY = {"add": 2, "sub": 2, "mul": 2, "fdiv": 2, "fmaf": 3}

#: The rounding modes TileLang's ``ieee_*`` names take (CUDA's ``__fadd_rn`` & co.).
_ROUNDING_MODES = ("rn", "rz", "ru", "rd")


def ieee_math(name: str) -> Any:
    """TileLang's ``ieee_<name>(*operands, rounding_mode="rn")``, the mode positional
    after the operands or by keyword: round-to-nearest is the plain operation; the
    directed modes raise `UnsupportedError`, any other mode ``ValueError``."""
    operation = _IEEE_OPS[name]
    arity = _IEEE_ARITY.get(name, 1)
    spelled = f"T.ieee_{name}"

    def ieee(*arguments: Any, rounding_mode: Any = None) -> Any:
        operands, rest = arguments[:arity], arguments[arity:]
        if len(operands) != arity or len(rest) > 1 or (rest and rounding_mode is not None):
            raise KernelTypeError(
                f"{spelled} takes {arity} operand(s) and an optional rounding mode, "
                f"got {len(arguments)} positional argument(s)"
                + (" and rounding_mode=" if rounding_mode is not None else "")
            )
        mode = rest[0] if rest else ("rn" if rounding_mode is None else rounding_mode)
        if not isinstance(mode, str) or mode not in _ROUNDING_MODES:
            raise KernelValueError(
                f"{spelled}: invalid rounding mode {mode!r}; expected one of {_ROUNDING_MODES}"
            )
        if mode != "rn":
            raise UnsupportedError(
                f"{spelled}(rounding_mode={mode!r}): only round-to-nearest ('rn') is "
                "supported; the directed modes are not implemented"
            )
        return operation(*operands)

    ieee.__name__ = f"ieee_{name}"
    ieee.__doc__ = f"IEEE {name} with round-to-nearest (``rounding_mode='rn'``)."
    return ieee


def _hint(name: str) -> Any:
    def hint(*args: Any, **kwargs: Any) -> None:
        return None

    hint.__name__ = name
    hint.__doc__ = f"``T.{name}(...)``: a CUDA scheduling hint, accepted as a no-op."
    return hint


annotate_l2_hit_ratio = _hint("annotate_l2_hit_ratio")
annotate_min_blocks_per_sm = _hint("annotate_min_blocks_per_sm")
annotate_restrict_buffers = _hint("annotate_restrict_buffers")
disable_warp_group_reg_alloc = _hint("disable_warp_group_reg_alloc")
no_set_max_nreg = _hint("no_set_max_nreg")
# Programmatic dependent launch lets a kernel start before the one it follows ends; every
# target here launches a program's kernels one after the other, so both are kept in order.
pdl_trigger = _hint("pdl_trigger")
pdl_sync = _hint("pdl_sync")


#: The most elements ``any_of``/``all_of`` expand into one expression.
LOGICAL_REDUCTION_LIMIT = 256


def _logical_reduction(buffer: Any, combine: Any, where: str) -> Any:
    import itertools

    from tl_ir import ops as _ops
    from tl_ir.language._operands import region_of

    region = region_of(buffer, where, _ops.ACCESS_READ)
    extents = [_ops.const_int(e) for e in region.extents]
    if any(e is None for e in extents):
        raise UnsupportedError(f"{where}: the region must have constant extents")
    count = 1
    for extent in extents:
        count *= int(extent or 0)
    if count > LOGICAL_REDUCTION_LIMIT:
        raise UnsupportedError(
            f"{where}: regions of at most {LOGICAL_REDUCTION_LIMIT} elements are supported, "
            f"got {count}"
        )
    truth = []
    for offsets in itertools.product(*(range(int(e or 0)) for e in extents)):
        load = tirx.BufferLoad(
            region.buffer, [m + o for m, o in zip(region.mins, offsets, strict=True)]
        )
        truth.append(load if str(region.dtype) == "bool" else load != tirx.const(0, region.dtype))
    result = truth[0]
    for value in truth[1:]:
        result = combine(result, value)
    return result


def any_of(buffer: Any) -> Any:
    """Whether any element of ``buffer`` (a buffer or region of at most 256 elements)
    is true (non-zero): a boolean expression."""
    return _logical_reduction(buffer, tirx.Or, "T.any_of(buffer)")


def all_of(buffer: Any) -> Any:
    """Whether every element of ``buffer`` (a buffer or region of at most 256 elements)
    is true (non-zero): a boolean expression."""
    return _logical_reduction(buffer, tirx.And, "T.all_of(buffer)")
