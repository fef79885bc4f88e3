"""The kernel language, imported by kernel authors as ``T`` (``import tl_ir.language as T``).

It re-exports TVMScript's TIR names (``tvm.script.tirx``: ``T.float32``, ``T.exp``,
``T.if_then_else``...) and adds or replaces the TileLang names documented in
docs/language.md: the kernel launch, tile allocations in their scopes, tile loops,
and the tile ops, which become ``tl.*`` calls described by `tl_ir.ops`.

The names live in modules by job: ``_params`` (parameter annotations, symbolic
dims), ``_launch`` (``T.Kernel``), ``_alloc`` (allocations), ``_loops`` (tile loops),
``_tile_ops`` (copy, fill, gemm), ``_tile_reductions``, ``_tile_atomics``, ``_misc``
(scalar helpers, print, hints). The GPU language (warp shuffles and reductions,
``sync_threads``...) is the public submodule
`tl_ir.language.gpu`, whose ``__all__`` is the one list of those names; every one
is ``T.<name>`` here.

Representation choices (also in docs/language.md):

* ``T.Kernel`` binds ``blockIdx.*`` / ``threadIdx.*`` through ``launch_thread``
  (``thread_extent`` attributes); see `tl_ir.launch.kernel_launch`.
* loops carry ``{"tl.loop_kind": kind}``; ``T.Pipelined`` adds ``"num_stages"``.
* scopes: ``alloc_shared`` -> ``shared.dyn``, ``alloc_fragment`` -> ``local.fragment``,
  ``alloc_local`` -> ``local``, ``alloc_var`` -> ``local.var`` (shape ``(1,)``).
* symbolic dims are ``int32`` Vars.
"""

# ruff: noqa: F403, F405
from __future__ import annotations

from typing import Any

import tvm.script.tirx as _tvm_script
from tvm.script.tirx import *

from tl_ir import bitwise_constants as _bitwise_constants
from tl_ir import chained_assign as _chained_assign
from tl_ir import element_operands as _element_operands
from tl_ir import float_division as _float_division
from tl_ir import float_negation as _float_negation
from tl_ir import kernel_tuple_target as _kernel_tuple_target
from tl_ir import python_if as _python_if
from tl_ir import python_values as _python_values
from tl_ir import scalar_annotations as _scalar_annotations
from tl_ir import slice_values as _slice_values
from tl_ir.dtypes import DTYPE_NAMES as _DTYPE_NAMES
from tl_ir.eager import const, empty, macro, make_tensor, ptr  # the eager style
from tl_ir.errors import (
    KernelSyntaxError,
    KernelTypeError,
    ScopeError,
    ShapeMismatchError,
    UnknownDtypeError,
    UnsupportedError,
)
from tl_ir.frontend import prim_func
from tl_ir.language import _operand_guards as _guards
from tl_ir.language import _tvm_compat
from tl_ir.language import gpu as _gpu
from tl_ir.language._alloc import (
    alloc_fragment,
    alloc_global,
    alloc_local,
    alloc_shared,
    alloc_var,
)
from tl_ir.language._bfloat16_math import isfinite as isfinite
from tl_ir.language._bfloat16_math import isinf as isinf
from tl_ir.language._bfloat16_math import isnan as isnan
from tl_ir.language._bfloat16_math import pow
from tl_ir.language._compat import UNSUPPORTED_REASONS as _UNSUPPORTED_REASONS
from tl_ir.language._compat import UnsupportedDtype as _UnsupportedDtype
from tl_ir.language._compat import unsupported_dtype_names as _unsupported_dtype_names
from tl_ir.language._compat import unsupported_stub as _unsupported_stub
from tl_ir.language._debug import device_assert
from tl_ir.language._dtypes import dtype, make_dtype_objects
from tl_ir.language._element_atomics import atomic_load, atomic_or, atomic_store
from tl_ir.language._extras import (
    AnyDType,
    KernelLaunchFrame,
    PrimExpr,
    PrimFunc,
    Serial,
    StridedTensor,
    StringImm,
    Unroll,
    Vectorized,
    align_up,
    all_of,
    allocate,
    annotate_l2_hit_ratio,
    annotate_min_blocks_per_sm,
    annotate_restrict_buffers,
    any_of,
    cdiv,
    ceildiv,
    disable_warp_group_reg_alloc,
    fast_rcp,
    get_tvm_dtype,
    index_to_coordinates,
    loop_break,
    no_set_max_nreg,
    pdl_sync,
    pdl_trigger,
)
from tl_ir.language._extras import fast_math as _fast_math
from tl_ir.language._extras import ieee_math as _ieee_math
from tl_ir.language._im2col import c2d_im2col, im2col
from tl_ir.language._launch import (
    Kernel,
    get_block_binding,
    get_block_bindings,
    get_block_extent,
    get_block_extents,
    get_thread_binding,
    get_thread_bindings,
    get_thread_extent,
    get_thread_extents,
)
from tl_ir.language._loops import Parallel, Pipelined, grid, serial, unroll, vectorized
from tl_ir.language._misc import (
    access_ptr,
    annotate_layout,
    cast,
    clamp,
    dp4a,
    import_source,
    infinity,
    let,
    max_value,
    min_value,
    print,
    reinterpret,
    round,
    use_swizzle,
)
from tl_ir.language._operand_guards import refusing_none as _refusing_none
from tl_ir.language._params import Buffer, Tensor, dynamic, param_alignment, symbolic
from tl_ir.language._persistent import Persistent
from tl_ir.language._random import rng_init, rng_rand, rng_rand_float
from tl_ir.language._reducers import (
    alloc_reducer,
    finalize_reducer,
    reducer_init,
    reducer_update,
)
from tl_ir.language._safe_values import annotate_safe_value
from tl_ir.language._sblock import reads, sblock, writes
from tl_ir.language._tile_atomics import (
    atomic_add,
    atomic_addx2,
    atomic_addx4,
    atomic_max,
    atomic_min,
)
from tl_ir.language._tile_ops import clear, copy, fill, gemm, transpose
from tl_ir.language._tile_reductions import (
    cummax,
    cumsum,
    reduce,
    reduce_absmax,
    reduce_abssum,
    reduce_max,
    reduce_min,
    reduce_sum,
)
from tl_ir.language._views import reshape, view
from tl_ir.language.gpu import *  # the GPU language: exactly gpu.__all__
from tl_ir.layout import IndexLayout as Layout  # TileLang's T.Layout(shape, index_fn)
from tl_ir.layout import make_mma_swizzle_layout as make_mma_swizzle_layout

# TVM's expression builders crashed the process on a None operand, and answered a
# wrong operand with their own signature text or an internal error.
if_then_else = _refusing_none(
    _tvm_script.if_then_else, "if_then_else", _guards.bool_condition("if_then_else")
)
Select = _refusing_none(_tvm_script.Select, "Select", _guards.bool_condition("Select"))
Ramp = _refusing_none(_tvm_script.Ramp, "Ramp", _guards.lanes_at("Ramp", 2))
Broadcast = _refusing_none(_tvm_script.Broadcast, "Broadcast", _guards.lanes_at("Broadcast", 1))
BufferLoad = _refusing_none(_tvm_script.BufferLoad, "BufferLoad")
launch_thread = _refusing_none(_tvm_script.launch_thread, "launch_thread")
for _name in _guards.NONE_REFUSING_FUNCTIONS:
    globals()[_name] = _refusing_none(globals()[_name], _name)
evaluate = _guards.expression_statement(globals()["evaluate"])
for _name in _guards.FLOAT_FUNCTIONS + _guards.SCALAR_FUNCTIONS:
    globals()[_name] = _guards.scalar_math(
        globals()[_name], _name, floats_only=_name in _guards.FLOAT_FUNCTIONS
    )

_tvm_compat.install()
_chained_assign.install()
_element_operands.install()
_bitwise_constants.install()
_float_division.install()
_float_negation.install()
_kernel_tuple_target.install()
_python_if.install()
_python_values.install()
_scalar_annotations.install()
_slice_values.install()

# Dtype objects (strings that construct values), replacing TVMScript's constructors.
_DTYPE_OBJECTS = make_dtype_objects()
float16 = _DTYPE_OBJECTS["float16"]
bfloat16 = _DTYPE_OBJECTS["bfloat16"]
float32 = _DTYPE_OBJECTS["float32"]
float64 = _DTYPE_OBJECTS["float64"]
int8 = _DTYPE_OBJECTS["int8"]
int16 = _DTYPE_OBJECTS["int16"]
int32 = _DTYPE_OBJECTS["int32"]
int64 = _DTYPE_OBJECTS["int64"]
uint8 = _DTYPE_OBJECTS["uint8"]
uint16 = _DTYPE_OBJECTS["uint16"]
uint32 = _DTYPE_OBJECTS["uint32"]
uint64 = _DTYPE_OBJECTS["uint64"]
bool = _DTYPE_OBJECTS["bool"]
float8_e4m3fn = _DTYPE_OBJECTS["float8_e4m3fn"]
float8_e5m2 = _DTYPE_OBJECTS["float8_e5m2"]
short = _DTYPE_OBJECTS["short"]
int = _DTYPE_OBJECTS["int"]
uint = _DTYPE_OBJECTS["uint"]
long = _DTYPE_OBJECTS["long"]
half = _DTYPE_OBJECTS["half"]
float = _DTYPE_OBJECTS["float"]
double = _DTYPE_OBJECTS["double"]
float8_e4m3 = _DTYPE_OBJECTS["float8_e4m3"]

# TileLang's fast-math (``T.__exp``) and IEEE-rounding (``T.ieee_add``) spellings.
for _name in ("exp", "exp10", "log", "log2", "log10", "sin", "cos", "tan"):
    globals()[f"__{_name}"] = _fast_math(_name)
for _name in ("add", "sub", "mul", "fdiv", "fmaf", "frcp", "fsqrt", "frsqrt"):
    globals()[f"ieee_{_name}"] = _ieee_math(_name)
# TileLang names without support here: calling one raises UnsupportedError naming why
# (a name the GPU language defines, T.alloc_barrier, keeps that module's stub).
for _name in _UNSUPPORTED_REASONS:
    globals().setdefault(_name, _unsupported_stub(_name))
for _name in _unsupported_dtype_names():
    globals().setdefault(_name, _UnsupportedDtype(_name))
del _name

_DTYPE_PREFIXES = ("float", "bfloat", "int", "uint", "bool")


def __getattr__(name: str) -> Any:
    if name.startswith(_DTYPE_PREFIXES):
        raise UnknownDtypeError(
            f"T.{name}: dtype {name!r} does not exist; expected one of {', '.join(_DTYPE_NAMES)}"
        )
    raise AttributeError(f"the kernel language (T) has no name {name!r}")


__all__ = [  # noqa: RUF022 - grouped as in LANGUAGE.md
    "prim_func",
    "Tensor",
    "Buffer",
    "symbolic",
    "dynamic",
    "param_alignment",
    "dtype",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3",
    "short",
    "int",
    "uint",
    "long",
    "half",
    "float",
    "double",
    "Kernel",
    "get_thread_binding",
    "get_thread_bindings",
    "get_thread_extent",
    "get_thread_extents",
    "get_block_binding",
    "get_block_bindings",
    "get_block_extent",
    "get_block_extents",
    "alloc_shared",
    "alloc_fragment",
    "alloc_local",
    "alloc_var",
    "alloc_global",
    "alloc_reducer",
    "reducer_init",
    "reducer_update",
    "finalize_reducer",
    "im2col",
    "c2d_im2col",
    "rng_init",
    "rng_rand",
    "rng_rand_float",
    "reshape",
    "view",
    "grid",
    "serial",
    "Parallel",
    "Pipelined",
    "Persistent",
    "Serial",
    "Unroll",
    "Vectorized",
    "unroll",
    "vectorized",
    "copy",
    "fill",
    "clear",
    "gemm",
    "reduce",
    "reduce_sum",
    "reduce_max",
    "reduce_min",
    "reduce_abssum",
    "reduce_absmax",
    "cumsum",
    "cummax",
    "transpose",
    "atomic_add",
    "atomic_addx2",
    "atomic_addx4",
    "atomic_max",
    "atomic_min",
    "atomic_or",
    "atomic_load",
    "atomic_store",
    "exp",
    "exp2",
    "log",
    "log2",
    "sqrt",
    "rsqrt",
    "abs",
    "tanh",
    "sigmoid",
    "sin",
    "cos",
    "pow",
    "floor",
    "ceil",
    "round",
    "max",
    "min",
    "clamp",
    "dp4a",
    "if_then_else",
    "cast",
    "infinity",
    "let",
    "max_value",
    "min_value",
    "ceildiv",
    "floordiv",
    "floormod",
    "print",
    "device_assert",
    "import_source",
    "access_ptr",
    "reinterpret",
    "annotate_layout",
    "Layout",
    "annotate_safe_value",
    "sblock",
    "reads",
    "writes",
    "use_swizzle",
    "annotate_l2_hit_ratio",
    "pdl_sync",
    "pdl_trigger",
    "annotate_min_blocks_per_sm",
    "annotate_restrict_buffers",
    "disable_warp_group_reg_alloc",
    "no_set_max_nreg",
    "StridedTensor",
    "AnyDType",
    "get_tvm_dtype",
    "KernelLaunchFrame",
    "PrimExpr",
    "PrimFunc",
    "StringImm",
    "align_up",
    "all_of",
    "any_of",
    "allocate",
    "cdiv",
    "index_to_coordinates",
    "loop_break",
    "fast_rcp",
    "const",
    "empty",
    "macro",
    "make_tensor",
    "ptr",
    "KernelSyntaxError",
    "KernelTypeError",
    "ShapeMismatchError",
    "ScopeError",
    "UnsupportedError",
]
# The GPU language: tl_ir.language.gpu's one list, whatever it holds.
__all__ += _gpu.__all__
