"""Where torch keeps a tensor's version count, found once per process and checked by behaviour.

torch counts in-place writes per tensor (``x._version``, shared by a tensor and its views)
and autograd refuses a tensor saved for a backward pass once the count moved. A kernel's
write through the data pointer must move it too (`tl_runtime.tensor_views.
in_place_write_marker`). ``torch._C._increment_version`` does that at about 0.15 us a call
(a pybind11 call); moving the count in memory costs three loads and an atomic add.

`version_count_layout` finds the three places that takes:

- ``object_offset``: where a torch tensor's Python object holds its C++ ``TensorImpl``
  pointer (as found by `tl_runtime.torch_negative_bit`);
- ``impl_offset``: the word of the ``TensorImpl`` that points to its version counter (the
  one a view shares and a tensor over the same storage, made apart, does not; ``NULL`` for
  tensors made under ``torch.inference_mode()``, which have no count);
- ``counter_offset``: the 32-bit count inside the counter object (what ``x._version``
  returns).

Nothing is taken on trust from a torch version: each place is found on tensors this module
creates, then a count moved through memory must be what ``x._version`` reports, for the
tensor and its view but not for another tensor over the same storage, and the count read
from memory must equal ``x._version`` on a set of tensors made every way (views,
parameters, subclasses, each dtype class, requires_grad, numpy-backed). Any mismatch or
missing API gives ``None``, and the launcher calls ``torch._C._increment_version`` instead
(correct, slower). Reads stay within the allocations' usable sizes.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

from tl_runtime.torch_negative_bit import (
    _IMPL_SCAN_LIMIT,
    _object_offset,
    _usable_size_reader,
    _word,
)
from tl_runtime.torch_probes import ProbedLayout

__all__ = ["VersionCountLayout", "read_version_count", "version_count_layout"]

#: (object_offset, impl_offset, counter_offset): see the module docstring.
VersionCountLayout = tuple[int, int, int]

_WORD = 8
_COUNTER_SCAN_LIMIT = 64


def version_count_layout(kind: type) -> VersionCountLayout | None:
    """The version count's place for instances of tensor type ``kind``, or None.

    As `tl_runtime.torch_negative_bit.negative_bit_layout`: ``kind`` must be
    ``torch.Tensor`` or a subclass keeping torch's own behaviour; probed once per process
    (torch must already be imported); None means: call ``torch._C._increment_version``.
    """
    return PROBE.for_type(kind)


def read_version_count(tensor: Any, layout: VersionCountLayout) -> int | None:
    """The count as the launcher reads it (tests, the probe): None without one."""
    object_offset, impl_offset, counter_offset = layout
    impl = _word(id(tensor) + object_offset)
    if impl == 0:
        return None
    counter = _word(impl + impl_offset)
    if counter == 0:
        return None
    return int(ctypes.c_uint32.from_address(counter + counter_offset).value)


def _counter_word(torch: Any, tensor: Any, limit: int) -> int | None:
    """The one word of ``tensor``'s TensorImpl that a view shares and that neither a tensor
    over the same storage made apart nor an unrelated tensor holds: the counter pointer."""
    view = tensor.view(-1)
    alias = torch.empty(0, dtype=tensor.dtype, device="cpu").set_(
        tensor.untyped_storage(), 0, tuple(tensor.shape), tuple(tensor.stride())
    )
    other = torch.zeros_like(tensor)
    matches = []
    for offset in range(0, limit - _WORD + 1, _WORD):
        word = _word(tensor._cdata + offset)
        if word < 4096 or word % _WORD:
            continue  # not a heap pointer
        if _word(view._cdata + offset) != word:
            continue
        if word in (_word(alias._cdata + offset), _word(other._cdata + offset)):
            continue
        matches.append(offset)
    return matches[0] if len(matches) == 1 else None


def _probe(torch: Any) -> VersionCountLayout | None:
    base = torch._C.TensorBase
    usable_size = _usable_size_reader()
    if usable_size is None:
        return None
    tensor = torch.zeros(2, 3, device="cpu")
    object_offset = _object_offset(tensor, base)
    impl_size = int(usable_size(tensor._cdata))
    if object_offset is None or impl_size < _WORD:
        return None
    impl_offset = _counter_word(torch, tensor, min(impl_size, _IMPL_SCAN_LIMIT))
    if impl_offset is None:
        return None
    counter = _word(tensor._cdata + impl_offset)
    counter_size = min(int(usable_size(counter)), _COUNTER_SCAN_LIMIT)
    for _ in range(7):
        tensor.add_(0)
    matches = [
        offset
        for offset in range(0, counter_size - 4 + 1, 4)
        if ctypes.c_uint32.from_address(counter + offset).value == tensor._version == 7
    ]
    for _ in range(4):
        tensor.mul_(1)
    matches = [m for m in matches if ctypes.c_uint32.from_address(counter + m).value == 11]
    if len(matches) != 1 or tensor._version != 11:
        return None
    layout = (object_offset, impl_offset, matches[0])
    # Moved through memory, the count is what torch reports, for the view too, and not
    # for another tensor over the same storage.
    view = tensor.view(-1)
    alias = torch.empty(0, device="cpu").set_(tensor.untyped_storage(), 0, (6,), (1,))
    alias_before = alias._version
    ctypes.c_uint32.from_address(counter + matches[0]).value += 1
    if tensor._version != 12 or view._version != 12 or alias._version != alias_before:
        return None
    return layout if _agrees_everywhere(torch, layout) else None


def _samples(torch: Any) -> list[Any]:
    """Tensors made every way a kernel's argument could be, each with its own count."""
    subclass = type("ProbeSubclass", (torch.Tensor,), {})
    plain = torch.arange(12, dtype=torch.float32, device="cpu").reshape(3, 4)
    samples = [
        plain,
        plain.t(),
        plain[1:, ::2],
        torch.zeros((), dtype=torch.float64, device="cpu"),
        torch.zeros(2, dtype=torch.int8, device="cpu"),
        torch.zeros(2, dtype=torch.bool, device="cpu"),
        torch.zeros(2, dtype=torch.float16, device="cpu", requires_grad=True),
        torch.nn.Parameter(torch.ones(2, device="cpu")),
        torch.ones(3, device="cpu").as_subclass(subclass),
        torch.ones(3, dtype=torch.complex64, device="cpu").real,
        torch.from_numpy(plain.numpy().copy()) if "numpy" in sys.modules else plain.clone(),
    ]
    with torch.no_grad():
        for count, sample in enumerate(samples):
            for _ in range(count % 4):
                if sample.dtype == torch.bool:
                    sample.logical_or_(sample)
                else:
                    sample.add_(0)
    return samples


def _agrees_everywhere(torch: Any, layout: VersionCountLayout) -> bool:
    base = torch._C.TensorBase
    samples = _samples(torch)
    if len({sample._version for sample in samples}) < 2:
        return False
    for sample in samples:
        if _object_offset(sample, base) != layout[0]:
            return False
        if read_version_count(sample, layout) != sample._version:
            return False
    with torch.inference_mode():
        counted_not = torch.zeros(2, device="cpu")
    return read_version_count(counted_not, layout) is None


#: The process's probe (its state: `tl_runtime.torch_probes.ProbedLayout`).
PROBE: ProbedLayout[VersionCountLayout] = ProbedLayout(_probe)
