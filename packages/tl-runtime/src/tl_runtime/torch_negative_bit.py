"""Where torch keeps a tensor's negative bit, found once per process and checked by behaviour.

torch can mark a tensor as lazily negated (``x._neg_view()``, ``z.conj().imag``): its memory
holds the values negated and only a bit in the tensor's dispatch key set says so. The bit can
flip on the same Python object over the same memory (``x.data = x._neg_view()``,
``torch._C._set_neg``) with nothing else a caller can see changing, so the launcher must read it
on every call. ``x.is_neg()`` costs about 0.1 µs (torch releases and retakes the GIL around it);
reading the bit from memory costs two loads.

`negative_bit_layout` finds the two places that read takes:

- ``object_offset``: where a torch tensor's Python object holds its C++ ``TensorImpl`` pointer
  (the value ``x._cdata`` returns), inside the object's C struct;
- ``impl_offset`` and ``mask``: the 64-bit word of the ``TensorImpl`` that holds its dispatch
  key set (the value ``torch._C._dispatch_keys(x).raw_repr()`` returns) and the bit of it that
  ``torch._C._set_neg`` flips.

Nothing is taken on trust from a torch version: the offsets are found on tensors this module
creates and then checked against ``is_neg()`` on a set of tensors built every way the bit can be
set (views, ``.data`` swaps, complex parts, parameters, subclasses, each dtype class). Any
mismatch, missing torch API or unexpected layout gives ``None``, and the launcher keeps asking
``is_neg()`` (correct, slower). The reads made here stay inside objects whose extent is known: the
tensor object's C struct (``__basicsize__``) and, for the ``TensorImpl``, the allocation's usable
size from the C library (the probe is skipped where that is not available).
"""

from __future__ import annotations

import ctypes
import struct
import sys
from typing import Any

from tl_runtime.torch_probes import ProbedLayout

__all__ = ["NegativeBitLayout", "negative_bit_layout"]

#: (object_offset, impl_offset, mask): see the module docstring.
NegativeBitLayout = tuple[int, int, int]

_WORD = 8
# The probe looks no further than this into a TensorImpl (the key set sits at byte 168 of a
# 184-byte TensorImpl in torch 2.13); the allocation's usable size bounds it further.
_IMPL_SCAN_LIMIT = 1024


def negative_bit_layout(kind: type) -> NegativeBitLayout | None:
    """The negative bit's place for instances of tensor type ``kind``, or None.

    ``kind`` must be ``torch.Tensor`` or a subclass of it that keeps torch's own ``is_neg`` and
    ``__torch_function__`` (any other type gives None: its own answer is what counts, so it is
    asked). The layout is probed once per process (the first call imports nothing: torch must already be imported,
    as it is once a torch tensor reaches a kernel) and is the same for every subclass, whose
    instances extend the same C struct. None means: ask ``x.is_neg()`` instead.
    """
    return PROBE.for_type(kind)


def read_negative_bit(tensor: Any, layout: NegativeBitLayout) -> bool | None:
    """The bit as the launcher reads it (for tests and the probe): None when no impl is held."""
    object_offset, impl_offset, mask = layout
    impl = _word(id(tensor) + object_offset)
    if impl == 0:
        return None
    return bool(_word(impl + impl_offset) & mask)


def _word(address: int) -> int:
    value: int = struct.unpack("=Q", ctypes.string_at(address, _WORD))[0]
    return value


def _usable_size_reader() -> Any:
    """The C library's ``malloc_usable_size`` (glibc, musl) or ``malloc_size`` (macOS), or None."""
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return None
    for name in ("malloc_usable_size", "malloc_size"):
        function = getattr(libc, name, None)
        if function is not None:
            function.restype = ctypes.c_size_t
            function.argtypes = [ctypes.c_void_p]
            return function
    return None


def _object_offset(tensor: Any, base: type) -> int | None:
    """The one word of the tensor object's C struct that holds ``tensor._cdata``."""
    impl = tensor._cdata
    head = object.__basicsize__
    matches = [
        offset
        for offset in range(head, base.__basicsize__ - _WORD + 1, _WORD)
        if _word(id(tensor) + offset) == impl
    ]
    return matches[0] if len(matches) == 1 else None


def _key_set_word(tensor: Any, torch: Any, limit: int) -> int | None:
    """The first word of the tensor's TensorImpl equal to its dispatch key set, within ``limit``."""
    impl = tensor._cdata
    keys = torch._C._dispatch_keys(tensor).raw_repr()
    for offset in range(0, limit - _WORD + 1, _WORD):
        if _word(impl + offset) == keys:
            return offset
    return None


def _probe(torch: Any) -> NegativeBitLayout | None:
    base = torch._C.TensorBase
    set_neg = torch._C._set_neg
    usable_size = _usable_size_reader()
    if usable_size is None:
        return None
    tensor = torch.zeros(3, device="cpu")
    impl_size = int(usable_size(tensor._cdata))
    object_offset = _object_offset(tensor, base)
    if object_offset is None or impl_size < _WORD:
        return None
    impl_offset = _key_set_word(tensor, torch, min(impl_size, _IMPL_SCAN_LIMIT))
    if impl_offset is None:
        return None
    before = _word(tensor._cdata + impl_offset)
    set_neg(tensor, True)
    try:
        after = _word(tensor._cdata + impl_offset)
        reported = torch._C._dispatch_keys(tensor).raw_repr()
    finally:
        set_neg(tensor, False)
    flipped = before ^ after
    one_bit_set = flipped != 0 and not flipped & (flipped - 1) and not before & flipped
    if not one_bit_set or after != reported or _word(tensor._cdata + impl_offset) != before:
        return None
    layout = (object_offset, impl_offset, flipped)
    return layout if _agrees_everywhere(torch, layout) else None


def _samples(torch: Any) -> list[Any]:
    """Tensors with and without the bit, made every way it can be set or kept."""
    plain = torch.arange(12, dtype=torch.float32, device="cpu").reshape(3, 4)
    swapped = torch.ones(4, device="cpu")
    swapped.data = swapped._neg_view()
    flipped_back = torch.ones(4, device="cpu")._neg_view()
    flipped_back.data = torch.ones(4, device="cpu")
    forced = torch.ones(5, device="cpu")
    torch._C._set_neg(forced, True)
    complex_values = torch.ones(3, dtype=torch.complex64, device="cpu")
    subclass = type("ProbeSubclass", (torch.Tensor,), {})

    samples = [
        plain,
        plain.t(),
        plain[1:, ::2],
        plain._neg_view(),
        plain._neg_view()[1:],
        swapped,
        flipped_back,
        forced,
        complex_values.conj().imag,
        complex_values.conj().real,
        complex_values.imag,
        torch.zeros((), dtype=torch.float64, device="cpu"),
        torch.zeros(2, dtype=torch.int8, device="cpu")._neg_view(),
        torch.zeros(2, dtype=torch.bool, device="cpu"),
        torch.zeros(2, dtype=torch.float16, device="cpu", requires_grad=True),
        torch.nn.Parameter(torch.ones(2, device="cpu")),
        plain.as_subclass(subclass),
        plain._neg_view().as_subclass(subclass),
        torch.from_numpy(plain.numpy()) if _has_numpy() else plain.clone(),
    ]
    return samples


def _has_numpy() -> bool:
    return "numpy" in sys.modules


def _agrees_everywhere(torch: Any, layout: NegativeBitLayout) -> bool:
    samples = _samples(torch)
    if not any(sample.is_neg() for sample in samples) or all(s.is_neg() for s in samples):
        return False
    base = torch._C.TensorBase
    for sample in samples:
        if _object_offset(sample, base) != layout[0]:
            return False
        if read_negative_bit(sample, layout) is not bool(sample.is_neg()):
            return False
    return True


#: The process's probe (its state: `tl_runtime.torch_probes.ProbedLayout`).
PROBE: ProbedLayout[NegativeBitLayout] = ProbedLayout(_probe)
