"""Memory-layout helpers TileLang programs import as ``tilelang.layout`` (here
``tl_jit.layout``), for ``T.annotate_layout({buffer: make_swizzled_layout(buffer)})``, and ``T.Layout(shape,
index_fn)`` (`IndexLayout`).

A swizzled or linear layout only rearranges where a tile's elements sit in shared
memory, never their values, so here it is a hint: ``T.annotate_layout`` checks it and
records its kind in the function attribute ``tl.shared_layouts``; GPU targets that
swizzle shared tiles honour it (docs/gpu.md), the others ignore it. Register-fragment layouts for specific MMA
instructions are not supported and raise `UnsupportedError`.

``T.Layout(shape, index_fn)`` maps each index of a tile of ``shape`` to an index of
the storage (``lambda i, j: (j, i)``). On a shared or global buffer it is a hint as
well: the buffer keeps its row-major order (TileLang stores the buffer in the
layout's order), so element values are the same whichever layout is annotated. On a
fragment it is refused: a fragment's placement over threads is written as a function
returning ``(thread, local_index)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import tvm
from tvm import tirx

from tl_ir import ops as _ops
from tl_ir.errors import KernelTypeError, UnsupportedError

__all__ = [
    "IndexLayout",
    "MemoryLayout",
    "check_index_map_rank",
    "make_full_bank_swizzled_layout",
    "make_fully_replicated_layout_fragment",
    "make_gemm_fragment_8x8",
    "make_gemm_fragment_8x8_transposed",
    "make_half_bank_swizzled_layout",
    "make_linear_layout",
    "make_mma_swizzle_layout",
    "make_quarter_bank_swizzled_layout",
    "make_swizzled_layout",
    "make_tcgen05mma_swizzled_layout",
    "make_volta_swizzled_layout",
    "make_wgmma_swizzled_layout",
]


@dataclass(frozen=True)
class MemoryLayout:
    """A shared-memory arrangement hint for one buffer.

    Attributes:
        buffer: the name of the buffer it was made for.
        kind: which arrangement TileLang would use (``swizzled``, ``full_bank``,
            ``linear``...).
    """

    buffer: str
    kind: str


def _buffer_name(buffer: Any, where: str) -> str:
    if isinstance(buffer, tvm.ir.TensorRegion | tvm.ir.TensorLoad):
        buffer = buffer.source
    if not _ops.is_buffer(buffer):
        raise KernelTypeError(
            f"{where}: expected a buffer (or a region or element of one), got {buffer!r}"
        )
    return str(buffer.name)


def check_index_map_rank(buffer: Any, index_map: Any) -> None:
    """Refuse a layout (``T.annotate_layout({buffer: fn})``'s function as a
    ``tirx.IndexMap``, or one given as such) whose inputs are not one index per dim of
    ``buffer``: ``lambda i, j: i`` on a 1-D tile was recorded and meant nothing.

    Raises:
        KernelTypeError: names the buffer, its rank and shape, and the count of indices.
    """
    shape = tuple(buffer.ty.shape)
    count = len(index_map.initial_indices)
    if count != len(shape):
        name = str(buffer.name)
        raise KernelTypeError(
            f"T.annotate_layout({{{name}: ...}}): expected a layout of {len(shape)} "
            f"{'index' if len(shape) == 1 else 'indices'}, one per dim of {name} (rank "
            f"{len(shape)}, shape ({', '.join(str(d) for d in shape)})), got a function "
            f"of {count} {'index' if count == 1 else 'indices'}"
        )


def make_swizzled_layout(buffer: Any, k_major: bool = True, allow_pad: bool = True) -> MemoryLayout:
    """TileLang's default swizzled shared-memory layout of ``buffer`` (a hint)."""
    return MemoryLayout(_buffer_name(buffer, "make_swizzled_layout(buffer)"), "swizzled")


def make_volta_swizzled_layout(
    buffer: Any, is_a: bool = True, k_inner: bool = True
) -> MemoryLayout:
    """The swizzled layout of Volta MMA operands (a hint)."""
    return MemoryLayout(_buffer_name(buffer, "make_volta_swizzled_layout(buffer)"), "volta")


def make_wgmma_swizzled_layout(
    buffer: Any, continuity: int | None = None, k_major: bool = True
) -> MemoryLayout:
    """The swizzled layout of Hopper WGMMA operands (a hint)."""
    return MemoryLayout(_buffer_name(buffer, "make_wgmma_swizzled_layout(buffer)"), "wgmma")


def make_tcgen05mma_swizzled_layout(
    buffer: Any, continuity: int | None = None, k_major: bool = True
) -> MemoryLayout:
    """The swizzled layout of Blackwell tcgen05 MMA operands (a hint)."""
    return MemoryLayout(_buffer_name(buffer, "make_tcgen05mma_swizzled_layout(buffer)"), "tcgen05")


def make_full_bank_swizzled_layout(buffer: Any) -> MemoryLayout:
    """A 128-byte swizzle of ``buffer`` (a hint)."""
    return MemoryLayout(_buffer_name(buffer, "make_full_bank_swizzled_layout(buffer)"), "full_bank")


def make_half_bank_swizzled_layout(buffer: Any) -> MemoryLayout:
    """A 64-byte swizzle of ``buffer`` (a hint)."""
    return MemoryLayout(_buffer_name(buffer, "make_half_bank_swizzled_layout(buffer)"), "half_bank")


def make_quarter_bank_swizzled_layout(buffer: Any) -> MemoryLayout:
    """A 32-byte swizzle of ``buffer`` (a hint)."""
    name = _buffer_name(buffer, "make_quarter_bank_swizzled_layout(buffer)")
    return MemoryLayout(name, "quarter_bank")


def make_linear_layout(buffer: Any) -> MemoryLayout:
    """The plain row-major layout of ``buffer`` (what every target uses unless told)."""
    return MemoryLayout(_buffer_name(buffer, "make_linear_layout(buffer)"), "linear")


def make_mma_swizzle_layout(shared_buf: Any, is_smooth: bool = False) -> MemoryLayout:
    """TileLang's swizzle of a shared tile feeding tensor-core instructions (a hint).

    As in TileLang, a tile whose rows are not a whole number of 64-byte groups, or
    ``is_smooth=True``, keeps the linear layout; any other gets the default swizzle.
    """
    name = _buffer_name(shared_buf, "make_mma_swizzle_layout(shared_buf)")
    source = shared_buf.source if isinstance(shared_buf, tvm.ir.TensorRegion) else shared_buf
    row = source.ty.shape[-1] if len(source.ty.shape) else 1
    bits = tvm.DataType(str(source.ty.dtype)).bits
    swizzles = isinstance(row, tirx.IntImm | int) and int(row) * bits % 512 == 0
    return MemoryLayout(name, "swizzled" if swizzles and not is_smooth else "linear")


def _fragment_unsupported(name: str) -> UnsupportedError:
    return UnsupportedError(
        f"{name}: register-fragment layouts of specific MMA instructions are not "
        "supported; fragments get their layout from the target's lowering"
    )


def make_gemm_fragment_8x8() -> Any:
    """Not supported: raises `UnsupportedError` (an mma.sync register fragment)."""
    raise _fragment_unsupported("make_gemm_fragment_8x8()")


def make_gemm_fragment_8x8_transposed() -> Any:
    """Not supported: raises `UnsupportedError` (an mma.sync register fragment)."""
    raise _fragment_unsupported("make_gemm_fragment_8x8_transposed()")


def make_fully_replicated_layout_fragment(buffer: Any, threads: int) -> Any:
    """Not supported: raises `UnsupportedError` (a register-fragment layout)."""
    raise _fragment_unsupported("make_fully_replicated_layout_fragment(buffer, threads)")


def _layout_dim(dim: Any, position: int) -> Any:
    dim = _ops.exact_int(dim)
    if isinstance(dim, tirx.IntImm):
        dim = int(dim.value)
    if isinstance(dim, bool) or not (isinstance(dim, int) or tvm.ir.is_prim_expr(dim)):
        raise KernelTypeError(
            f"T.Layout(shape, index_fn): shape[{position}] must be an int or a size "
            f"expression, got {dim!r}"
        )
    if isinstance(dim, int) and dim <= 0:
        raise KernelTypeError(
            f"T.Layout(shape, index_fn): shape[{position}] must be positive, got {dim}"
        )
    return dim


class IndexLayout:
    """TileLang's ``T.Layout(shape, index_fn)``: where each element of a tile of
    ``shape`` sits in storage, ``index_fn(*indices) -> storage indices``.

    ``T.annotate_layout({buffer: layout})`` takes it for shared and global buffers as a
    hint (see the module docstring); the methods below answer as TileLang's do.

    Raises (constructor):
        KernelTypeError: ``shape`` is not a sequence of positive sizes, ``index_fn`` is
            not callable, or it does not return index expressions for that many
            indices.
    """

    __slots__ = ("_index_map", "_shape")

    def __init__(self, shape: Any, forward_fn: Callable[..., Any]) -> None:
        shape = _ops.exact_int(shape)
        if isinstance(shape, int | tirx.IntImm):
            shape = [shape]
        try:
            dims = list(shape)
        except TypeError:
            raise KernelTypeError(
                f"T.Layout(shape, index_fn): expected a shape (a list of sizes), got {shape!r}"
            ) from None
        if not dims:
            raise KernelTypeError("T.Layout(shape, index_fn): the shape has no dims")
        if not callable(forward_fn):
            raise KernelTypeError(
                f"T.Layout(shape, index_fn): expected a function of {len(dims)} indices, "
                f"got {forward_fn!r}"
            )
        self._shape = tuple(_layout_dim(d, k) for k, d in enumerate(dims))
        variables = [tirx.Var(f"i{k}", "int32") for k in range(len(dims))]
        try:
            index = forward_fn(*variables)
        except Exception as err:
            raise KernelTypeError(
                f"T.Layout(shape, index_fn): index_fn could not be applied to {len(dims)} "
                f"indices: {type(err).__name__}: {err}"
            ) from err
        items = list(index) if isinstance(index, list | tuple | tvm.ir.Array) else [index]
        converted = []
        for item in items:
            item = _ops.exact_int(item)
            if isinstance(item, int) and not isinstance(item, bool):
                item = tirx.IntImm("int32", item)
            if not tvm.ir.is_prim_expr(item):
                raise KernelTypeError(
                    "T.Layout(shape, index_fn): index_fn must return index expressions, "
                    f"got {item!r}"
                )
            converted.append(item)
        if not converted:
            raise KernelTypeError("T.Layout(shape, index_fn): index_fn returned no index")
        self._index_map = tirx.IndexMap(variables, converted, None)

    @property
    def index_map(self) -> Any:
        """The layout as a ``tirx.IndexMap`` (what ``T.annotate_layout`` records)."""
        return self._index_map

    @property
    def index(self) -> list[Any]:
        """The storage index expressions, in the forward variables."""
        return list(self._index_map.final_indices)

    def get_input_shape(self) -> list[Any]:
        """The tile shape the layout was made for."""
        return list(self._shape)

    def get_forward_vars(self) -> list[Any]:
        """The index variables ``index`` is written in (``i0``, ``i1``...)."""
        return list(self._index_map.initial_indices)

    def get_forward_index(self) -> list[Any]:
        """Same as `index`."""
        return self.index

    def get_output_shape(self) -> list[Any]:
        """The extent of each storage index: one more than its largest value over the
        input shape (an expression where the shape is symbolic)."""
        if not all(isinstance(d, int) for d in self._shape):
            return list(self._index_map.map_shape(list(self._shape)))
        analyzer = tvm.sym.Analyzer()
        for var, extent in zip(self._index_map.initial_indices, self._shape, strict=True):
            analyzer.bind(var, tvm.ir.Range(0, extent))
        return [int(analyzer.const_int_bound(e).max_value) + 1 for e in self.index]

    def map_forward_index(self, indices: Any) -> list[Any]:
        """The storage index of the element at ``indices``.

        Raises:
            KernelTypeError: not one index per input dim.
        """
        values = list(indices)
        if len(values) != len(self._shape):
            raise KernelTypeError(
                f"T.Layout.map_forward_index: expected {len(self._shape)} indices, got "
                f"{len(values)}"
            )
        values = [_ops.exact_int(v) for v in values]
        converted = [tirx.IntImm("int32", v) if isinstance(v, int) else v for v in values]
        analyzer = tvm.sym.Analyzer()
        return [analyzer.simplify(e) for e in self._index_map.map_indices(converted)]

    def __call__(self, *indices: Any) -> list[Any]:
        """``layout(i, j)``: `map_forward_index` of ``(i, j)``."""
        return self.map_forward_index(indices)

    def __repr__(self) -> str:
        return f"T.Layout({list(self._shape)}, {self._index_map})"
