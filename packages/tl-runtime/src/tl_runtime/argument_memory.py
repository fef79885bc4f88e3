"""What a kernel assumes about the memory of its tensor arguments, and the checks of it.

A compiled kernel assumes, for every tensor argument:

* index width: every element it addresses is reachable with an index of the manifest's
  ``index_bits`` (32 unless the manifest says 64): at most ``2**31 - 1`` elements from
  the first to the last one it reads, and no dim longer than that (a stride-0 dim
  addresses one element but is still looped over). A larger array would be indexed with
  wrapped integers (too few elements computed, or writes before the array).
* byte order: elements in the machine's native byte order (DLPack has no byte-order
  field; the kernel reads raw bytes).
* aliasing: a parameter the kernel writes (role ``output`` or ``inout``) shares no byte
  with any other parameter (kernels are compiled assuming no aliasing: an output shifted
  into an input would read values the kernel already overwrote), and no two of its own
  elements share memory (a broadcast view, a stride-0 dim: the writes of different
  elements would land on one place, racing when blocks run in parallel). An ``inout``
  parameter is the kernel's declared in-place update: it is read and written through the
  one pointer.

``ArgumentChecker.prepare`` refuses arguments breaking any of these with an error naming
the parameter; the adapters' fast paths decline such calls to it (a per-call address
range check between written parameters and the others, and an element-count bound on
the shapes they bind).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

from tl_runtime.manifest import Manifest, ParamSpec

_INDEX_LIMITS = {32: 2**31 - 1, 64: 2**63 - 1}


def max_elements(manifest: Manifest) -> int:
    """The most elements a tensor argument of ``manifest``'s kernel may span (index width)."""
    return _INDEX_LIMITS[manifest.index_bits]


def element_span(shape: Sequence[int], strides: Sequence[int]) -> tuple[int, int]:
    """``(lowest, highest + 1)`` element offsets a tensor of ``shape``/``strides`` addresses.

    ``(0, 0)`` for a zero-size tensor (no element is addressed). Strides are in elements
    and may be negative.
    """
    if any(d == 0 for d in shape):
        return 0, 0
    low = high = 0
    for extent, stride in zip(shape, strides, strict=True):
        reach = (extent - 1) * stride
        if reach < 0:
            low += reach
        else:
            high += reach
    return low, high + 1


def check_index_range(where: str, manifest: Manifest, shape: Sequence[int], span: int) -> None:
    """Refuse a tensor the kernel's index width cannot address.

    Both the span (elements from the first to the last one addressed) and every dim must
    fit: a kernel loops over each dim with an index of that width, so a stride-0 dim of
    ``2**31`` elements (a broadcast addressing one element) wraps a 32-bit loop as surely
    as a long array does.

    Args:
        where: the parameter's description for the message (kernel and parameter name).
        manifest: the kernel's manifest (its ``index_bits``).
        shape: the tensor's shape.
        span: elements from the first to the last one addressed.

    Raises:
        ValueError: ``span`` or a dim exceeds ``max_elements(manifest)``.
    """
    limit = max_elements(manifest)
    if span > limit:
        raise ValueError(
            f"{where}: expected at most {limit} elements (the kernel indexes with "
            f"{manifest.index_bits}-bit integers), got shape {list(shape)} spanning {span} "
            "elements; split the work into smaller arrays"
        )
    longest = max(shape, default=0)
    if longest > limit:
        raise ValueError(
            f"{where}: expected dims of at most {limit} elements (the kernel loops over each "
            f"dim with {manifest.index_bits}-bit integers), got shape {list(shape)} with a dim "
            f"of {longest} (spanning {span} element(s) in memory: a stride-0 broadcast); split "
            "the work into smaller arrays"
        )


def check_native_byte_order(where: str, dtype: object) -> None:
    """Refuse a numpy dtype that is not in the machine's native byte order.

    Raises:
        TypeError: ``dtype`` (a numpy dtype) is byte-swapped.
    """
    if getattr(dtype, "isnative", True):
        return
    order = "big" if sys.byteorder == "little" else "little"
    raise TypeError(
        f"{where}: expected {getattr(dtype, 'name', dtype)} in native ({sys.byteorder}-endian) "
        f"byte order, got a {order}-endian array; convert it with "
        "x.astype(x.dtype.newbyteorder('='))"
    )


def check_no_overlap(
    kernel: str, params: Sequence[ParamSpec], spans: Sequence[tuple[int, int, int]]
) -> None:
    """Refuse a written parameter whose memory overlaps another parameter's.

    Args:
        kernel: the kernel's name (for the message).
        params: the manifest's parameters.
        spans: ``(param index, first byte address, last byte address + 1)`` of every
            tensor the caller passed (empty ranges for zero-size tensors).

    Raises:
        ValueError: naming both parameters; an ``inout`` parameter is only its own alias.
    """
    for index, low, high in spans:
        if not params[index].written or low == high:
            continue
        for other, other_low, other_high in spans:
            if other == index or other_low == other_high:  # itself, or no byte addressed
                continue
            if other_low < high and low < other_high:
                spec = params[index]
                raise ValueError(
                    f"{kernel}: parameter {spec.name!r}: expected memory shared with no other "
                    f"parameter (the kernel writes this {spec.role} parameter and is compiled "
                    f"assuming no aliasing), got bytes [{low:#x}, {high:#x}) overlapping "
                    f"parameter {params[other].name!r} at [{other_low:#x}, {other_high:#x}); "
                    "pass separate arrays (a copy of the input)"
                )


#: Above this many elements, a layout that fails the sorted-strides test is not
#: enumerated to find out whether it really overlaps: it is refused as possibly so.
_ENUMERATED_ELEMENTS = 1 << 22


def strides_separate(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """The quick test that no two elements of ``shape``/``strides`` share memory: with the
    dims of extent > 1 sorted by ``|stride|``, each stride exceeds the reach of the
    smaller ones (``sum((extent - 1) * |stride|)``). True proves it; False may still be a
    layout without overlap (interleaved strides), which `layout_overlaps` enumerates.
    The Cython launcher and the ``tvm_ffi`` fast path apply the same test."""
    dims = sorted((abs(s), e) for e, s in zip(shape, strides, strict=True) if e > 1)
    reach = 0
    for stride, extent in dims:
        if stride <= reach:
            return False
        reach += (extent - 1) * stride
    return True


def layout_overlaps(shape: Sequence[int], strides: Sequence[int]) -> bool | None:
    """Whether two elements of ``shape``/``strides`` (in elements) share memory: False,
    True, or None where it is too large to find out (`strides_separate` failed and the
    layout has more than ``2**22`` elements)."""
    if 0 in shape or strides_separate(shape, strides):
        return False
    count = math.prod(shape)
    if count > _ENUMERATED_ELEMENTS:
        return None
    import numpy as np

    offsets = np.zeros(1, dtype=np.int64)
    for extent, stride in zip(shape, strides, strict=True):
        offsets = np.add.outer(offsets, np.arange(extent, dtype=np.int64) * stride).reshape(-1)
    return bool(np.unique(offsets).size != offsets.size)


def check_no_self_overlap(where: str, shape: Sequence[int], strides: Sequence[int]) -> None:
    """Refuse a written tensor two of whose elements share memory (or may: one too large to
    enumerate that fails `strides_separate`).

    Raises:
        ValueError: naming ``where``, the shape and the strides.
    """
    overlaps = layout_overlaps(shape, strides)
    if overlaps is False:
        return
    certainty = "share memory" if overlaps else "may share memory (too many to check)"
    raise ValueError(
        f"{where}: expected a written array whose elements do not share memory, got shape "
        f"{list(shape)} with strides {list(strides)} (elements), whose elements {certainty}: "
        "the kernel's writes of different elements would land on one place; pass an array "
        "with its own memory for every element (a broadcast or expanded view cannot be "
        "written)"
    )
