"""Reading one tensor argument: numpy arrays, torch tensors and other DLPack producers.

``read_view`` turns an argument into a ``TensorView`` (dtype name, shape, element strides,
device, data pointer) or refuses it with an error naming the parameter, the expectation
and what came: byte strides that are not a whole number of elements, byte-swapped
arrays, exports that fail. ``torch_argument`` refuses the torch tensors no kernel can
take (sparse, quantized, nested, meta, without memory) and resolves torch's lazy views
(negative and conjugate bits) for inputs; a written parameter with such a bit is refused,
since a temporary would hide the kernel's write. ``launchable`` wraps ``ml_dtypes`` numpy
arrays (bfloat16, float8), which numpy cannot export through DLPack, in an exporter that
states their DLPack dtype.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from typing import Any

from tl_runtime.argument_memory import check_native_byte_order
from tl_runtime.call_plan import DLPACK_CPU, ParamPlan
from tl_runtime.dtypes import DtypeInfo, canonical_dtype, dtype_info


@dataclass(frozen=True)
class TensorView:
    """What the checker reads from one tensor argument (library-independent)."""

    dtype: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    device_type: int
    device_id: int
    data_ptr: int


def describe(value: object) -> str:
    """The qualified type name of ``value`` (builtins by their bare name)."""
    kind = type(value)
    return (
        f"{kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" else kind.__name__
    )


def first_line(exc: BaseException, limit: int = 200) -> str:
    """An exception's first line, capped: libraries append pages of C++ frames."""
    text = str(exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    return line if len(line) <= limit else line[: limit - 3] + "..."


def is_torch(value: object) -> bool:
    """Whether ``value`` is a torch object (a tensor, for the arguments that reach here).

    Subclasses of ``torch.Tensor`` defined elsewhere count too: they carry torch's lazy
    bits and flags, which a plain DLPack export would ignore.
    """
    return is_torch_type(type(value))


def torch_tensor_type() -> type | None:
    """``torch.Tensor`` if torch is imported, else None; never imports torch.

    None too while another thread is still importing torch (the module is in
    ``sys.modules`` before it defines ``Tensor``): a call made meanwhile sees no torch
    rather than raising AttributeError.
    """
    tensor = getattr(sys.modules.get("torch"), "Tensor", None)
    return tensor if isinstance(tensor, type) else None


def is_torch_type(kind: type) -> bool:
    """Whether ``kind`` is a torch type or a subclass of ``torch.Tensor`` (see `is_torch`)."""
    if kind.__module__.startswith("torch"):
        return True
    tensor = torch_tensor_type()  # a torch subclass exists only once torch is imported
    return tensor is not None and issubclass(kind, tensor)


def in_place_write_marker(kind: type) -> Any:
    """What tells ``kind``'s framework that a kernel wrote its tensors in place, or None.

    For torch tensors, ``torch._C._increment_version`` (what
    ``torch.autograd.graph.increment_version`` calls), taking a tuple of tensors: torch
    counts in-place writes per tensor (shared by its views), and autograd refuses to use
    a tensor saved for a backward pass once the count moved ("modified by an inplace
    operation"). A kernel's write that torch never heard of would be used silently, with
    the wrong gradient. Tensors made under ``torch.inference_mode()`` have no count; torch
    skips them.
    """
    if not is_torch_type(kind):
        return None
    tensor = torch_tensor_type()
    if tensor is None or not issubclass(kind, tensor):
        return None
    return getattr(sys.modules["torch"]._C, "_increment_version", None)


def mark_written_in_place(tensors: tuple[Any, ...]) -> None:
    """Tell torch that the kernel wrote these caller tensors (`in_place_write_marker`)."""
    if not tensors:
        return
    marker = in_place_write_marker(type(tensors[0]))
    if marker is not None:
        marker(tensors)


def reported_device(value: object) -> tuple[int, int] | None:
    """``value.__dlpack_device__()`` as two ints, or None when absent or malformed."""
    method = getattr(value, "__dlpack_device__", None)
    if method is None:
        return None
    try:
        device_type, device_id = method()
        return int(device_type), int(device_id)
    except Exception:  # a producer's bug: the export reports it
        return None


def numpy_view(plan: ParamPlan, value: Any) -> TensorView:
    """The view of a numpy array.

    Raises:
        TypeError: the array is byte-swapped.
        ValueError: an axis of more than one element has a byte stride that is not a whole
            number of elements (a field of a structured array): no kernel can index it.
    """
    check_native_byte_order(plan.where, value.dtype)
    itemsize = value.dtype.itemsize
    shape = tuple(value.shape)
    byte_strides = value.strides
    # Only an axis that is stepped along matters (a size-1 axis's stride is never used).
    odd = (
        itemsize
        and 0 not in shape
        and any(n > 1 and s % itemsize for n, s in zip(shape, byte_strides, strict=True))
    )
    if odd:
        raise ValueError(
            f"{plan.where}: expected byte strides that are whole multiples of the element "
            f"size ({itemsize} bytes of {value.dtype.name}), got byte strides "
            f"{list(byte_strides)} for shape {list(shape)} (a field of a structured array, "
            "or a view of one); pass np.ascontiguousarray(x)"
        )
    strides = tuple(s // itemsize if itemsize else 0 for s in byte_strides)
    return TensorView(
        dtype=value.dtype.name,
        shape=shape,
        strides=strides,
        device_type=DLPACK_CPU,
        device_id=0,
        data_ptr=int(value.__array_interface__["data"][0]),
    )


def torch_argument(plan: ParamPlan, value: Any) -> Any:
    """A torch tensor as the kernel may take it, or an error naming the parameter.

    Refused (TypeError): sparse and other non-strided layouts, quantized and nested
    tensors, meta tensors and tensors without memory (fake, functional and lazily zero
    tensors report data pointer 0). Inputs with the negative or conjugate bit are resolved
    into a tensor holding the values they stand for (``resolve_neg``/``resolve_conj``); a
    written parameter with either bit is refused (ValueError), since the kernel would write
    a temporary. Inputs that require grad are passed detached (the output is a plain tensor,
    as in TileLang); a written parameter refuses them, since autograd cannot see the write.
    """
    where = plan.where
    import torch

    if value.layout != torch.strided:
        raise TypeError(
            f"{where}: expected a dense (strided) torch tensor, got one with layout "
            f"{value.layout}; pass x.to_dense()"
        )
    if value.is_quantized:
        raise TypeError(
            f"{where}: expected a tensor of {plan.dtype.name}, got a quantized torch tensor "
            f"({value.dtype}); pass x.dequantize() or x.int_repr()"
        )
    if value.is_nested:
        raise TypeError(
            f"{where}: expected a tensor of one shape, got a nested torch tensor; pass its "
            "components (x.unbind()) or x.to_padded_tensor(0)"
        )
    if value.is_meta:
        raise TypeError(
            f"{where}: expected a tensor with data, got a torch meta tensor (shape "
            f"{list(value.shape)}); meta tensors have no memory to compute on"
        )
    if value.numel() and value.data_ptr() == 0:
        raise TypeError(
            f"{where}: expected a tensor with memory, got a {describe(value)} of shape "
            f"{list(value.shape)} whose data pointer is 0 (a fake, functional or lazily zero "
            "tensor); pass a materialized tensor (x.clone() outside the tracing mode)"
        )
    lazy = [bit for bit, on in (("negative", value.is_neg()), ("conjugate", value.is_conj())) if on]
    if lazy:
        if plan.written:
            raise ValueError(
                f"{where}: expected a tensor whose memory holds its values, got one with "
                f"torch's lazy {' and '.join(lazy)} bit set (a view such as x.conj().imag or "
                f"x._neg_view()); the kernel writes this {plan.role} parameter in place, and a "
                "resolved copy would hide the write: pass a plain tensor"
            )
        value = value.resolve_neg().resolve_conj()
    if value.requires_grad:
        if plan.written:
            raise ValueError(
                f"{where}: expected a tensor that does not require grad, got one that does; "
                f"the kernel writes this {plan.role} parameter in place, which autograd "
                "cannot track (pass x.detach(), or allocate it under torch.no_grad())"
            )
        value = value.detach()
    return value


def torch_view(value: Any) -> TensorView:
    """The view of a torch tensor ``torch_argument`` accepted (read from torch itself)."""
    device = reported_device(value) or (DLPACK_CPU, 0)
    return TensorView(
        dtype=str(value.dtype).removeprefix("torch."),
        shape=tuple(value.shape),
        strides=tuple(value.stride()),
        device_type=device[0],
        device_id=device[1],
        data_ptr=int(value.data_ptr()),
    )


def dlpack_view(plan: ParamPlan, value: Any) -> TensorView:
    """The view of another DLPack producer, exported through tvm-ffi.

    Raises:
        TypeError: the export fails (naming the parameter and the producer's reason).
    """
    import tvm_ffi

    try:
        # No alignment demand here: the checker compares the pointer with the param's own.
        tensor = tvm_ffi.from_dlpack(value, require_alignment=0)
    except Exception as exc:
        raise TypeError(
            f"{plan.where}: expected a DLPack-exportable array of {plan.dtype.name}, got "
            f"{describe(value)} whose export failed: {first_line(exc)}"
        ) from None
    try:
        dtype = str(tensor.dtype)
    except Exception as exc:  # tvm-ffi names no complex or exotic type
        raise TypeError(
            f"{plan.where}: expected dtype {plan.dtype.name}, got a {describe(value)} of a "
            f"dtype tvm-ffi cannot name ({first_line(exc)})"
        ) from None
    device = tensor.device
    return TensorView(
        dtype=dtype,
        shape=tuple(int(d) for d in tensor.shape),
        strides=tuple(int(s) for s in tensor.strides),
        device_type=int(device.dlpack_device_type()),
        device_id=int(device.index),
        data_ptr=int(tensor.data_ptr()),
    )


def same_dtype(plan: ParamPlan, name: str) -> bool:
    """Whether an argument's dtype name is the parameter's (aliases resolved)."""
    return name == plan.dtype.name or canonical_dtype(name) == plan.dtype.name


# ---------------------------------------------------------------- ml_dtypes arrays


@functools.cache
def _capsule_api() -> tuple[Any, Any]:
    """``PyCapsule_GetName`` and ``PyCapsule_GetPointer`` through ctypes (loaded on first use)."""
    import ctypes

    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype = ctypes.c_char_p
    get_name.argtypes = [ctypes.py_object]
    return get_name, get_pointer


# Byte offsets in dlpack.h's structs: DLTensor.dtype follows data (8), device (8) and
# ndim (4); DLManagedTensorVersioned puts version, manager_ctx, deleter and flags
# (8 bytes each) before its DLTensor, DLManagedTensor puts it first.
_DTYPE_OFFSET = 20
_TENSOR_OFFSET = {b"dltensor": 0, b"dltensor_versioned": 32}


class MlDtypesExport:
    """A DLPack exporter for a numpy array of an ``ml_dtypes`` type (bfloat16, float8).

    numpy exports only its own dtypes; this exports the array viewed as unsigned integers
    of the same width and writes the true DLPack type into the fresh capsule before handing
    it on (the capsule is new and owned by its consumer; the memory is the array's own).
    """

    __slots__ = ("array", "info")

    def __init__(self, array: Any, info: DtypeInfo) -> None:
        self.array = array
        self.info = info

    @property
    def nbytes(self) -> int:
        """The array's size in bytes (what adapters copying host memory read)."""
        return int(self.array.nbytes)

    @property
    def shape(self) -> tuple[int, ...]:
        """The array's shape."""
        return tuple(self.array.shape)

    def __dlpack_device__(self) -> tuple[int, int]:
        return DLPACK_CPU, 0

    def __dlpack__(self, **options: Any) -> Any:
        unsigned = self.array.view(f"u{self.info.itemsize}")
        capsule = unsigned.__dlpack__(**options)
        get_name, get_pointer = _capsule_api()
        name = get_name(capsule)
        offset = _TENSOR_OFFSET.get(name)
        if offset is None:
            raise BufferError(f"numpy returned a DLPack capsule named {name!r}")
        address = get_pointer(capsule, name) + offset + _DTYPE_OFFSET
        import ctypes

        dtype = (ctypes.c_uint8 * 2).from_address(address)
        dtype[0] = self.info.dlpack_code
        dtype[1] = self.info.bits
        return capsule


def launchable(value: Any, numpy: Any) -> Any:
    """What the native call takes for a checked argument: ``ml_dtypes`` arrays wrapped."""
    if numpy is not None and type(value) is numpy.ndarray and value.dtype.num >= 256:
        name = canonical_dtype(value.dtype.name)
        if name is not None:
            return MlDtypesExport(value, dtype_info(name))
    return value
