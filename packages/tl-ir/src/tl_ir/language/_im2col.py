"""``T.im2col`` (and its older name ``T.c2d_im2col``): one tile of a 2-D convolution's
im2col matrix, copied from an NHWC image.

The im2col matrix of a convolution with a ``kernel x kernel`` filter has one row per
output pixel ``m = (n, oh, ow)`` (``N * OH * OW`` rows, row-major) and one column per
filter tap ``k = (kh, kw, c)`` (``kernel * kernel * C`` columns, row-major); its
element is the input pixel the tap sees, ``img[n, oh * stride + kh * dilation - pad,
ow * stride + kw * dilation - pad, c]``, or 0 in the padding. ``T.im2col(img, col,
nhw_step, c_step, kernel, stride, dilation, pad)`` fills the ``(block_m, block_k)``
tile ``col`` (its last two dims) with rows ``nhw_step * block_m + i`` and columns
``c_step * block_k + j`` of that matrix, as TileLang's convolution examples use it
(``T.im2col(data, data_shared, by, k_iter, KH, S, D, P)`` before a ``T.gemm``).

It is written as a ``T.Parallel`` loop over the tile (TileLang's own lowering of it
outside Hopper's TMA), so every target lowers it like any element-parallel copy
with computed indices. One difference: rows and columns past the end of the matrix
(the last tile of a size that is not a multiple of the tile) are 0 here, where
TileLang reads whatever those indices address.
"""

from __future__ import annotations

from typing import Any

from tvm import tirx
from tvm.script.ir_builder import tirx as _IB

from tl_ir import ops as _ops
from tl_ir.errors import KernelTypeError
from tl_ir.language._operands import fmt_extents, tile_of

__all__ = ["c2d_im2col", "im2col"]

_EVICTION_POLICIES = ("evict_normal", "evict_first", "evict_last")


def _size(value: Any, name: str, minimum: int) -> Any:
    known = _ops.const_int(value)
    if isinstance(value, bool) or (known is not None and known < minimum):
        raise KernelTypeError(
            f"T.im2col({name}=...): expected an integer >= {minimum}, got {value!r}"
        )
    if known is None and not (hasattr(value, "dtype") and "int" in str(value.dtype)):
        raise KernelTypeError(f"T.im2col({name}=...): expected an integer, got {value!r}")
    return tirx.const(known, "int32") if known is not None else value


def im2col(
    img: Any,
    col: Any,
    nhw_step: Any,
    c_step: Any,
    kernel: Any,
    stride: Any,
    dilation: Any,
    pad: Any,
    eviction_policy: str | None = None,
    annotations: dict[str, Any] | None = None,
) -> None:
    """Fill the tile ``col`` with a tile of ``img``'s im2col matrix (module docstring).

    Args:
        img: the NHWC image (a 4-D buffer).
        col: the destination tile; its last two dims are ``(block_m, block_k)``, any
            leading dims have extent 1.
        nhw_step, c_step: which tile of rows and of columns.
        kernel, stride, dilation, pad: the square filter's size, stride, dilation and
            zero padding.
        eviction_policy, annotations: TileLang's cache hints (checked, no effect).

    Raises:
        KernelTypeError: ``img`` is not a 4-D buffer, ``col`` not a 2-D tile of the
            same dtype, a size is not an integer in range, or a hint is invalid.
    """
    from tl_ir.language._loops import Parallel

    where = "T.im2col(img, col, ...)"
    if eviction_policy is not None and eviction_policy not in _EVICTION_POLICIES:
        raise KernelTypeError(
            f"T.im2col(eviction_policy=...): expected one of {', '.join(_EVICTION_POLICIES)} "
            f"or None, got {eviction_policy!r}"
        )
    if annotations is not None and not isinstance(annotations, dict):
        raise KernelTypeError(
            f"T.im2col(annotations=...): expected a dict or None, got {annotations!r}"
        )
    if not _ops.is_buffer(img) or len(img.ty.shape) != 4:
        raise KernelTypeError(f"{where}: img must be a 4-D NHWC buffer, got {img!r}")
    dst = tile_of(col, f"{where}: col", _ops.ACCESS_WRITE)
    if dst.rank < 2 or any(_ops.const_int(e) != 1 for e in dst.extents[:-2]):
        raise KernelTypeError(
            f"{where}: col must be a 2-D tile (leading dims of extent 1), got "
            f"{dst.buffer.name}{fmt_extents(dst.extents)}"
        )
    if str(img.ty.dtype) != dst.dtype:
        raise KernelTypeError(
            f"{where}: img and col must have one dtype, got {img.ty.dtype} and {dst.dtype}"
        )
    kernel = _size(kernel, "kernel", 1)
    stride = _size(stride, "stride", 1)
    dilation = _size(dilation, "dilation", 1)
    pad = _size(pad, "pad", 0)
    batch, height, width, channels = img.ty.shape
    out_h = tirx.floordiv(height + 2 * pad - (kernel - 1) * dilation - 1, stride) + 1
    out_w = tirx.floordiv(width + 2 * pad - (kernel - 1) * dilation - 1, stride) + 1
    block_m, block_k = dst.extents[-2], dst.extents[-1]
    with Parallel(block_m, block_k) as (i, j):
        m = nhw_step * block_m + i
        k = c_step * block_k + j
        h = (
            tirx.floordiv(tirx.floormod(m, out_h * out_w), out_w) * stride
            + tirx.floordiv(k, kernel * channels) * dilation
            - pad
        )
        w = (
            tirx.floormod(m, out_w) * stride
            + tirx.floormod(tirx.floordiv(k, channels), kernel) * dilation
            - pad
        )
        inside = tirx.all(
            m < batch * out_h * out_w,
            k < kernel * kernel * channels,
            h >= 0,
            h < height,
            w >= 0,
            w < width,
        )
        pixel = tirx.BufferLoad(
            img, [tirx.floordiv(m, out_h * out_w), h, w, tirx.floormod(k, channels)]
        )
        value = tirx.if_then_else(inside, pixel, tirx.const(0, dst.dtype))
        index = [*dst.mins[:-2], dst.mins[-2] + i, dst.mins[-1] + j]
        _IB.buffer_store(dst.buffer, value, index)


def c2d_im2col(
    img: Any,
    col: Any,
    nhw_step: Any,
    c_step: Any,
    kernel: Any,
    stride: Any,
    dilation: Any,
    pad: Any,
    eviction_policy: str | None = None,
    annotations: dict[str, Any] | None = None,
) -> None:
    """TileLang's older name of `im2col` (same arguments and meaning)."""
    im2col(img, col, nhw_step, c_step, kernel, stride, dilation, pad, eviction_policy, annotations)
