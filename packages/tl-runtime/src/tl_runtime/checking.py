"""Argument checking, alignment copies and output allocation, before any native call.

``ArgumentChecker.prepare`` is the complete (slow) path: it validates every argument
against the manifest, checks each tensor's data pointer against the alignment its
parameter declares (``ParamSpec.alignment``: the element size for kernels written in
tl-ir, 64 for manifests that do not say), copies misaligned read-only inputs, refuses
misaligned or read-only ``output``/``inout`` arrays (the kernel must write the caller's
own memory), binds symbolic dims and allocates ``out_idx`` outputs. Adapters run their own fast path for
the common case (exact numpy arrays that are already fine) and fall back to ``prepare``
for everything else, so every error message comes from this module.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, SupportsFloat, SupportsIndex, cast

from tl_runtime.argument_memory import (
    check_index_range,
    check_native_byte_order,
    check_no_overlap,
    element_span,
)
from tl_runtime.manifest import Manifest, ParamSpec

ALIGNMENT = 64
"""Byte alignment of every array the runtime allocates (outputs, copies of misaligned
inputs); at least any parameter's declared alignment in practice. Each parameter's own
requirement is ``ParamSpec.alignment``."""

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint8": (0, 2**8 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1),
}
_FLOAT_MAX = {
    "float16": 65504.0,
    "bfloat16": 3.3895313892515355e38,
    "float32": 3.4028234663852886e38,
}
_DLPACK_CPU = 1
_TORCH_DTYPES = {
    "bool": "bool",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "uint64": "uint64",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "float32": "float32",
    "float64": "float64",
}


_NUMPY_DTYPES: dict[Any, Any] = {}
"""dtype name -> numpy dtype, filled on first use (numpy stays optional)."""


def optional_numpy() -> ModuleType | None:
    """Return the numpy module, or None when numpy is not installed."""
    try:
        import numpy
    except ImportError:
        return None
    if not _NUMPY_DTYPES:
        for name in (*_INT_RANGES, "bool", "float16", "float32", "float64"):
            _NUMPY_DTYPES[name] = numpy.dtype(name)
    return numpy


def _describe(value: object) -> str:
    kind = type(value)
    return (
        f"{kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" else kind.__name__
    )


def outputs_follow(kind: type) -> bool:
    """Whether ``out_idx`` outputs are allocated by the library of tensors of type ``kind``.

    torch tensors in give torch tensors out (on the device of the first tensor argument);
    every other type gives numpy arrays. One rule for every adapter and path.
    """
    return kind.__module__.startswith("torch")


def _is_torch(value: object) -> bool:
    return type(value).__module__.startswith("torch")


def _first_line(exc: BaseException, limit: int = 200) -> str:
    """An exception's first line, capped: libraries append pages of C++ frames."""
    text = str(exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    return line if len(line) <= limit else line[: limit - 3] + "..."


@dataclass(frozen=True)
class TensorView:
    """What the checker reads from one tensor argument (library-independent)."""

    dtype: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    device_type: int
    device_id: int
    data_ptr: int


@dataclass
class PreparedCall:
    """The result of ``ArgumentChecker.prepare``.

    Attributes:
        args: every kernel argument in parameter order (outputs allocated), ready to pass.
        outputs: the allocated ``out_idx`` outputs, in order.
        bindings: the value of every symbolic dim (for launch metadata).
    """

    args: list[Any]
    outputs: list[Any]
    bindings: dict[str, int]


def _reported_device(value: object) -> tuple[int, int] | None:
    """``value.__dlpack_device__()`` as two ints, or None when absent or malformed."""
    method = getattr(value, "__dlpack_device__", None)
    if method is None:
        return None
    try:
        device_type, device_id = method()
        return int(device_type), int(device_id)
    except Exception:  # a producer's bug: the export below reports it
        return None


def _refuse_strided_output(kernel: str, spec: ParamSpec) -> None:
    """Refuse an ``out_idx`` parameter whose declared strides are not C-contiguous.

    The runtime allocates ``out_idx`` outputs C-contiguous; a kernel indexing one with
    other strides would write outside it or be refused at every call.

    Raises:
        NotImplementedError: naming the kernel, the parameter and its strides.
    """
    if spec.strides is None:
        return
    compact: list[int] = []
    running = 1
    for dim in reversed(spec.shape):
        compact.insert(0, running)
        running = running * dim if isinstance(dim, int) and isinstance(running, int) else -1
    if all(isinstance(s, int) for s in spec.strides) and list(spec.strides) == compact:
        return
    raise NotImplementedError(
        f"{kernel}: out_idx parameter {spec.name!r} declares strides {list(spec.strides)} for "
        f"shape {list(spec.shape)}; outputs the runtime allocates are C-contiguous: pass "
        f"{spec.name!r} as an argument (leave it out of out_idx), or declare it a contiguous "
        "T.Tensor"
    )


class ArgumentChecker:
    """Validates call arguments against a manifest's parameters (built once per kernel).

    The checker an adapter reuses: ``prepare(args)`` is the complete check of a call (every
    error message a caller sees comes from it), ``tensor_view`` reads one array's dtype,
    shape, strides, device and data pointer, ``allocate`` makes an output like the inputs.

    Args:
        manifest: the kernel's manifest.
        device_types: DLPack device types whose arrays the kernel accepts; None (the
            default) means the manifest's ``argument_device_types``. An adapter that copies
            host arrays to the device itself passes those types plus 1 (CPU).
    """

    def __init__(self, manifest: Manifest, device_types: Sequence[int] | None = None) -> None:
        self.manifest = manifest
        self.params = manifest.params
        self.out_idx = frozenset(manifest.out_idx)
        self.caller_params = [i for i in range(len(self.params)) if i not in self.out_idx]
        self.device_types = tuple(
            manifest.argument_device_types if device_types is None else device_types
        )
        names = ", ".join(self.params[i].name for i in self.caller_params)
        self._signature = f"{manifest.name}({names})"
        self._np = optional_numpy()
        # Arrays the runtime makes satisfy every param: 64 bytes, or more if one asks.
        # Bytes per element of each tensor param (byte ranges of the aliasing check).
        self._itemsizes = [
            (int("".join(c for c in p.dtype if c.isdigit()) or 8) + 7) // 8 for p in self.params
        ]
        # Aliasing needs a written parameter the caller passes and another tensor.
        caller_tensors = [i for i in self.caller_params if self.params[i].kind == "tensor"]
        self._check_aliasing = len(caller_tensors) > 1 and any(
            self.params[i].written for i in caller_tensors
        )
        self.allocation_alignment = max(
            [ALIGNMENT] + [p.alignment for p in self.params if p.kind == "tensor"]
        )
        for index in sorted(self.out_idx):
            _refuse_strided_output(manifest.name, self.params[index])

    # ------------------------------------------------------------------ entry point
    def prepare(self, args: Sequence[Any]) -> PreparedCall:
        """Check ``args`` (the caller's arguments, outputs in ``out_idx`` left out).

        Returns:
            The PreparedCall (full argument list, allocated outputs, symbolic dim values).

        Raises:
            TypeError: wrong count, a non-array for a tensor, wrong dtype (or byte order),
                wrong scalar type.
            ValueError: wrong rank or dims, disagreeing symbolic dims, non-contiguous or
                wrongly strided data, wrong device, a written (``output``/``inout``) array
                that is read-only or not aligned to its parameter's ``alignment``, scalar
                out of range, a tensor (or an ``out_idx`` output) with more elements than
                the kernel's index width reaches, a written array overlapping another
                parameter's memory. Misaligned or read-only inputs are copied, never
                refused. (``tl_runtime.argument_memory`` states these assumptions.)
        """
        if len(args) != len(self.caller_params):
            raise TypeError(
                f"{self._signature} takes {len(self.caller_params)} argument(s), got {len(args)}"
            )
        bindings: dict[str, int] = {}
        bound_by: dict[str, str] = {}
        full: list[Any] = [None] * len(self.params)
        first_tensor: Any = None
        spans: list[tuple[int, int, int]] = []  # (param, first byte, last byte + 1)
        for index, value in zip(self.caller_params, args, strict=True):
            spec = self.params[index]
            if spec.kind == "scalar":
                full[index] = self._check_scalar(spec, value)
                continue
            value = self._as_array(spec, value)
            if _is_torch(value):
                value = self._torch_argument(spec, value)
            view = self.tensor_view(spec, value)
            self._check_tensor(spec, view, bindings, bound_by)
            spans.append(self._byte_span(index, spec, view))
            if first_tensor is None:
                first_tensor = value
            writable = self._writable(value)
            written = spec.written
            if not writable and written:
                raise ValueError(
                    f"{self._where(spec)}: expected a writable array (the kernel writes this "
                    f"{spec.role} parameter), got a read-only one"
                )
            if not writable:  # DLPack cannot export read-only numpy arrays: pass a copy
                value = self._aligned_copy(spec, value, view)
            elif view.data_ptr % spec.alignment:
                if written:
                    raise ValueError(
                        f"{self._where(spec)}: expected data aligned to {spec.alignment} bytes, "
                        f"got address {view.data_ptr:#x} (offset "
                        f"{view.data_ptr % spec.alignment}); the kernel writes this "
                        f"{spec.role} parameter, so it cannot be copied: pass an array aligned "
                        f"to {spec.alignment} bytes"
                        + (
                            ", or let the kernel allocate it (out_idx)"
                            if spec.role == "output"
                            else ""
                        )
                    )
                value = self._aligned_copy(spec, value, view)
            full[index] = self._compact_if_empty(value)
        if self._check_aliasing:
            check_no_overlap(self.manifest.name, self.params, spans)
        outputs = []
        for index in sorted(self.out_idx):
            spec = self.params[index]
            shape = tuple(d if isinstance(d, int) else bindings[d] for d in spec.shape)
            check_index_range(self._where(spec), self.manifest, shape, math.prod(shape))
            out = self.allocate(spec.dtype, shape, like=first_tensor)
            full[index] = out
            outputs.append(out)
        return PreparedCall(full, outputs, bindings)

    # ------------------------------------------------------------------ pieces
    def _byte_span(self, index: int, spec: ParamSpec, view: TensorView) -> tuple[int, int, int]:
        """Check the tensor's reach against the index width; return its byte range."""
        low, high = element_span(view.shape, view.strides)
        check_index_range(self._where(spec), self.manifest, view.shape, high - low)
        size = self._itemsizes[index]
        return index, view.data_ptr + low * size, view.data_ptr + high * size

    def _where(self, spec: ParamSpec) -> str:
        return f"{self.manifest.name}: parameter {spec.name!r}"

    def _check_scalar(self, spec: ParamSpec, value: object) -> int | float | bool:
        np = self._np
        where = self._where(spec)
        dtype = spec.dtype
        if dtype == "bool":
            if isinstance(value, bool) or (np is not None and isinstance(value, np.bool_)):
                return bool(value)
            raise TypeError(f"{where}: expected a bool scalar, got {_describe(value)}")
        integral = isinstance(value, int) and not isinstance(value, bool)
        if np is not None and isinstance(value, np.integer):
            integral = True
        if dtype in _INT_RANGES:
            if not integral:
                raise TypeError(
                    f"{where}: expected an int scalar ({dtype}), got {_describe(value)}"
                )
            number = int(cast(SupportsIndex, value))
            low, high = _INT_RANGES[dtype]
            if not low <= number <= high:
                raise ValueError(
                    f"{where}: expected an int in [{low}, {high}] ({dtype}), got {number}"
                )
            return number
        is_float = isinstance(value, float) or (np is not None and isinstance(value, np.floating))
        if not (integral or is_float):
            raise TypeError(f"{where}: expected a real scalar ({dtype}), got {_describe(value)}")
        try:
            number_f = float(cast(SupportsFloat, value))
        except OverflowError:  # an int beyond float64 (10**400)
            raise ValueError(
                f"{where}: expected a value representable as {dtype}, got an int of "
                f"{int(cast(SupportsIndex, value)).bit_length()} bits (beyond float64's range)"
            ) from None
        limit = _FLOAT_MAX.get(dtype)
        if limit is not None and math.isfinite(number_f) and abs(number_f) > limit:
            raise ValueError(f"{where}: expected a value representable as {dtype}, got {number_f}")
        return number_f

    def _as_array(self, spec: ParamSpec, value: Any) -> Any:
        """Buffer-protocol objects without DLPack (memoryview, array.array) become numpy views."""
        np = self._np
        if np is None or isinstance(value, np.ndarray) or hasattr(value, "__dlpack__"):
            return value
        try:
            buffer = memoryview(value)
        except TypeError:
            return value  # tensor_view reports it
        try:
            return np.asarray(buffer)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"{self._where(spec)}: expected an array of {spec.dtype}, got a "
                f"{_describe(value)} buffer numpy cannot view ({exc})"
            ) from None

    def _torch_argument(self, spec: ParamSpec, value: Any) -> Any:
        """A torch tensor as the kernel may take it: autograd and meta tensors handled.

        Inputs that require grad are passed detached (the output is a plain tensor, as
        in TileLang); a parameter the kernel writes refuses them, since autograd cannot
        see the write (torch itself forbids in-place writes into such leaves).
        """
        if getattr(value, "is_meta", False):
            raise TypeError(
                f"{self._where(spec)}: expected a tensor with data, got a torch meta tensor "
                f"(shape {list(value.shape)}); meta tensors have no memory to compute on"
            )
        if getattr(value, "requires_grad", False):
            if spec.written:
                raise ValueError(
                    f"{self._where(spec)}: expected a tensor that does not require grad, got one "
                    f"that does; the kernel writes this {spec.role} parameter in place, which "
                    "autograd cannot track (pass x.detach(), or allocate it under "
                    "torch.no_grad())"
                )
            value = value.detach()
        return value

    def tensor_view(self, spec: ParamSpec, value: object) -> TensorView:
        """Read dtype, shape, strides, device and data pointer from a tensor argument.

        Raises:
            TypeError: ``value`` is not a DLPack producer (or numpy array).
        """
        np = self._np
        if np is not None and isinstance(value, np.ndarray):
            check_native_byte_order(self._where(spec), value.dtype)
            itemsize = value.dtype.itemsize
            strides = tuple(s // itemsize if itemsize else 0 for s in value.strides)
            if itemsize and any(s % itemsize for s in value.strides):
                strides = tuple(-1 for _ in value.strides)  # not expressible in elements
            return TensorView(
                dtype=value.dtype.name,
                shape=tuple(value.shape),
                strides=strides,
                device_type=_DLPACK_CPU,
                device_id=0,
                data_ptr=int(value.__array_interface__["data"][0]),
            )
        if not hasattr(value, "__dlpack__"):
            raise TypeError(
                f"{self._where(spec)}: expected an array supporting DLPack (numpy array, torch "
                f"tensor, ...) of {spec.dtype}, got {_describe(value)}"
            )
        reported = _reported_device(value)
        if reported is not None and reported[0] not in self.device_types:
            # Refused before any export: exporting a device tensor may synchronize its stream.
            raise self._wrong_device(spec, *reported)
        import tvm_ffi

        try:
            # No alignment demand here: prepare checks the pointer against the param's own.
            tensor = tvm_ffi.from_dlpack(value, require_alignment=0)
        except Exception as exc:
            raise TypeError(
                f"{self._where(spec)}: expected a DLPack-exportable array, got "
                f"{_describe(value)} whose export failed: {_first_line(exc)}"
            ) from None
        device = tensor.device
        return TensorView(
            dtype=str(tensor.dtype),
            shape=tuple(int(d) for d in tensor.shape),
            strides=tuple(int(s) for s in tensor.strides),
            device_type=int(device.dlpack_device_type()),
            device_id=int(device.index),
            data_ptr=int(tensor.data_ptr()),
        )

    def _wrong_device(self, spec: ParamSpec, device_type: int, device_id: int) -> ValueError:
        return ValueError(
            f"{self._where(spec)}: expected a tensor on DLPack device type {self.device_types} "
            f"({'cpu' if self.device_types == (_DLPACK_CPU,) else 'gpu'}), got device type "
            f"{device_type} (id {device_id})"
        )

    def _check_tensor(
        self,
        spec: ParamSpec,
        view: TensorView,
        bindings: dict[str, int],
        bound_by: dict[str, str],
    ) -> None:
        where = self._where(spec)
        if view.dtype != spec.dtype:
            raise TypeError(f"{where}: expected dtype {spec.dtype}, got {view.dtype}")
        if len(view.shape) != len(spec.shape):
            raise ValueError(
                f"{where}: expected rank {len(spec.shape)} (shape {list(spec.shape)}), got "
                f"rank {len(view.shape)} (shape {list(view.shape)})"
            )
        for axis, (want, got) in enumerate(zip(spec.shape, view.shape, strict=True)):
            self._bind(where, f"dim {axis}", want, got, bindings, bound_by, spec.name)
        if view.device_type not in self.device_types:
            raise self._wrong_device(spec, view.device_type, view.device_id)
        if spec.strides is None and 0 not in view.shape:  # zero-size: no element is addressed
            expected = 1
            for axis in range(len(view.shape) - 1, -1, -1):
                if view.shape[axis] != 1 and view.strides[axis] != expected:
                    advice = (
                        f"the kernel writes this {spec.role} parameter in place, so pass a "
                        "contiguous array and read the result from it (a contiguous copy made "
                        "for the call would hide the update)"
                        if spec.written
                        else "pass np.ascontiguousarray(x) or x.contiguous()"
                    )
                    raise ValueError(
                        f"{where}: expected a C-contiguous array, got strides {list(view.strides)} "
                        f"(elements) for shape {list(view.shape)}; {advice}"
                    )
                expected *= view.shape[axis]
        elif spec.strides is not None:
            for axis, (want, got) in enumerate(zip(spec.strides, view.strides, strict=True)):
                self._bind(where, f"stride {axis}", want, got, bindings, bound_by, spec.name)

    @staticmethod
    def _bind(
        where: str,
        what: str,
        want: int | str,
        got: int,
        bindings: dict[str, int],
        bound_by: dict[str, str],
        owner: str,
    ) -> None:
        if isinstance(want, int):
            if got != want:
                raise ValueError(f"{where}: expected {what} = {want}, got {got}")
            return
        if want in bindings:
            if bindings[want] != got:
                raise ValueError(
                    f"{where}: expected {what} = {want} = {bindings[want]} (bound by parameter "
                    f"{bound_by[want]!r}), got {got}"
                )
            return
        bindings[want] = got
        bound_by[want] = owner

    def _writable(self, value: Any) -> bool:
        np = self._np
        if np is not None and isinstance(value, np.ndarray):
            return bool(value.flags.writeable)
        return True

    def _compact_if_empty(self, value: Any) -> Any:
        """A zero-size numpy array re-viewed with C-contiguous strides.

        numpy gives zero-size arrays zero strides (``(0, 0)``), which DLPack passes on
        and TVM-built kernels refuse as "not a compact array"; the data is never read,
        so a view with the strides of the declared layout is the same argument.
        """
        np = self._np
        if np is None or not isinstance(value, np.ndarray) or value.size:
            return value
        compact: list[int] = []
        step = value.dtype.itemsize
        for extent in reversed(value.shape):
            compact.append(step)
            step *= max(int(extent), 1)
        strides = tuple(reversed(compact))
        if value.strides == strides:
            return value
        return np.lib.stride_tricks.as_strided(value, value.shape, strides)

    def _aligned_copy(self, spec: ParamSpec, value: Any, view: TensorView) -> Any:
        """An aligned copy of an input, laid out as its parameter declares.

        C-contiguous for a parameter without declared strides; else with the argument's
        element strides (already checked equal to the declared ones), since the kernel
        indexes with the declared strides.
        """
        np = self._np
        if np is None:
            raise ValueError(
                f"{self._where(spec)}: expected data aligned to {spec.alignment} bytes; copying "
                "a misaligned input needs numpy, which is not installed"
            )
        source = value if isinstance(value, np.ndarray) else np.from_dlpack(value)
        if spec.strides is None or not source.size:
            copy = self._aligned_empty(np, source.dtype, source.shape)
        else:
            low, high = element_span(view.shape, view.strides)
            itemsize = source.dtype.itemsize
            alignment = self.allocation_alignment
            pad = alignment // itemsize  # room to align element 0 (negative strides precede it)
            memory = self._aligned_empty(np, source.dtype, (high - low + pad,))
            first = -low + (low * itemsize) % alignment // itemsize
            copy = np.lib.stride_tricks.as_strided(
                memory[first:], source.shape, tuple(s * itemsize for s in view.strides)
            )
        copy[...] = source
        return copy

    def _aligned_empty(self, np: ModuleType, dtype: Any, shape: tuple[int, ...]) -> Any:
        from tvm_ffi import from_dlpack

        alignment = self.allocation_alignment
        dtype = _NUMPY_DTYPES.get(dtype) or np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        raw = np.empty(nbytes + alignment, dtype=np.uint8)
        # the tvm-ffi view reads the address several times faster than raw.ctypes.data
        offset = (-from_dlpack(raw, require_alignment=0).data_ptr()) & (alignment - 1)
        return self._compact_if_empty(raw[offset : offset + nbytes].view(dtype).reshape(shape))

    def allocate(self, dtype: str, shape: tuple[int, ...], like: Any) -> Any:
        """Allocate an output with the library of ``like`` (numpy by default).

        numpy outputs are aligned to ``allocation_alignment`` (64 bytes, or the largest
        alignment a parameter declares if that is more).

        torch tensors in give a torch tensor on the same device; any other producer, or no
        tensor argument, gives a numpy array.

        Raises:
            RuntimeError: numpy is needed but not installed.
        """
        if like is not None and outputs_follow(type(like)):
            import importlib

            torch = importlib.import_module("torch")  # reached only when torch tensors came in
            out = torch.empty(shape, dtype=getattr(torch, _TORCH_DTYPES[dtype]), device=like.device)
            if self.allocation_alignment > ALIGNMENT and out.data_ptr() % self.allocation_alignment:
                raise NotImplementedError(
                    f"{self.manifest.name}: allocating a torch output aligned to "
                    f"{self.allocation_alignment} bytes (torch gave address {out.data_ptr():#x}); "
                    "pass numpy arrays, or declare at most 64-byte alignment"
                )
            return out
        np = self._np
        if np is None:
            raise RuntimeError(
                f"{self.manifest.name}: allocating output ({dtype}, {list(shape)}) needs numpy, "
                "which is not installed; pass torch tensors or install numpy"
            )
        if dtype == "bfloat16":
            raise NotImplementedError("allocating bfloat16 outputs with numpy (needs ml_dtypes)")
        return self._aligned_empty(np, dtype, shape)
