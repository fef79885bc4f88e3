"""Argument checking, alignment copies and output allocation, before any native call.

``ArgumentChecker.prepare`` is the complete (slow) path: it validates every argument
against the kernel's argument-check plan (``tl_runtime.call_plan``, derived from the
manifest), checks each tensor's data pointer against the alignment its parameter declares
(``ParamSpec.alignment``: the element size for kernels written in tl-ir, 64 for manifests
that do not say), copies misaligned read-only inputs, refuses misaligned or read-only
``output``/``inout`` arrays (the kernel must write the caller's own memory), binds
symbolic dims and allocates ``out_idx`` outputs. Adapters run their own fast paths from
the same plan for the common case (exact numpy arrays, torch tensors that are already
fine) and fall back to ``prepare`` for everything else, so every error message comes from
this module (and ``tl_runtime.tensor_views``, which reads one tensor).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, SupportsFloat, SupportsIndex, cast

from tl_runtime.argument_memory import (
    check_index_range,
    check_no_overlap,
    check_no_self_overlap,
    element_span,
)
from tl_runtime.call_plan import ALIGNMENT, DLPACK_CPU, CallPlan, ParamPlan, call_plan
from tl_runtime.dtypes import dtype_info, numpy_dtype, optional_ml_dtypes, torch_dtype
from tl_runtime.manifest import Manifest, ParamSpec
from tl_runtime.tensor_views import (
    TensorView,
    describe,
    dlpack_view,
    is_torch,
    is_torch_type,
    launchable,
    numpy_view,
    reported_device,
    same_dtype,
    torch_argument,
    torch_view,
)

__all__ = [
    "ALIGNMENT",
    "ArgumentChecker",
    "PreparedCall",
    "TensorView",
    "optional_numpy",
    "outputs_follow",
]


def optional_numpy() -> ModuleType | None:
    """Return the numpy module, or None when numpy is not installed."""
    try:
        import numpy
    except ImportError:
        return None
    return numpy


def outputs_follow(kind: type) -> bool:
    """Whether ``out_idx`` outputs are allocated by the library of tensors of type ``kind``.

    torch tensors in give torch tensors out (on the device of the first tensor argument);
    every other type gives numpy arrays. One rule for every adapter and path.
    """
    return is_torch_type(kind)


def compact_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The element strides a compact (C-order) array of ``shape`` has, exactly.

    Each stride is the product of the extents to its right, 0 when one of them is 0:
    the layout TVM-built kernels check, which numpy and torch do not give zero-size
    arrays.
    """
    strides: list[int] = []
    step = 1
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


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
    #: the caller's torch tensors the kernel writes in place (`mark_written_in_place`
    #: after the launch)
    written_torch: tuple[Any, ...] = ()


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
    """Validates call arguments against a kernel's argument-check plan (built once per kernel).

    The checker an adapter reuses: ``prepare(args)`` is the complete check of a call (every
    error message a caller sees comes from it), ``tensor_view`` reads one array's dtype,
    shape, strides, device and data pointer, ``allocate`` makes an output like the inputs.
    ``plan`` is the ``CallPlan`` the adapters' fast paths are generated from.

    Args:
        manifest: the kernel's manifest.
        device_types: DLPack device types whose arrays the kernel accepts; None (the
            default) means the manifest's ``argument_device_types``. An adapter that copies
            host arrays to the device itself passes those types plus 1 (CPU).
    """

    def __init__(self, manifest: Manifest, device_types: Sequence[int] | None = None) -> None:
        self.manifest = manifest
        self.plan: CallPlan = call_plan(manifest, device_types)
        self.params = manifest.params
        self.out_idx = frozenset(manifest.out_idx)
        self.caller_params = list(self.plan.caller)
        self.device_types = self.plan.device_types
        self.allocation_alignment = self.plan.allocation_alignment
        self._np = optional_numpy()
        for index in self.plan.out_idx:
            _refuse_strided_output(manifest.name, self.params[index])

    # ------------------------------------------------------------------ entry point
    def prepare(self, args: Sequence[Any]) -> PreparedCall:
        """Check ``args`` (the caller's arguments, outputs in ``out_idx`` left out).

        Returns:
            The PreparedCall (full argument list, allocated outputs, symbolic dim values).

        Raises:
            TypeError: wrong count, a non-array for a tensor, wrong dtype (or byte order),
                wrong scalar type, a torch tensor no kernel can take (sparse, quantized,
                nested, meta, without memory).
            ValueError: wrong rank or dims, disagreeing symbolic dims, non-contiguous or
                wrongly strided data (byte strides not a whole number of elements
                included), wrong device, a written (``output``/``inout``) array that is
                read-only, not aligned to its parameter's ``alignment`` or a torch view
                with the negative/conjugate bit, scalar out of range, a tensor (or an
                ``out_idx`` output) with more elements, or a dim longer, than the kernel's
                index width reaches, a written array overlapping another parameter's
                memory. Misaligned or read-only inputs are copied, never refused; inputs
                with torch's lazy bits are resolved. (``tl_runtime.argument_memory``
                states these assumptions.)
        """
        plan = self.plan
        if len(args) != len(plan.caller):
            raise TypeError(
                f"{plan.signature} takes {len(plan.caller)} argument(s), got {len(args)}"
            )
        bindings: dict[str, int] = {}
        bound_by: dict[str, str] = {}
        full: list[Any] = [None] * len(plan.params)
        first_tensor: Any = None
        spans: list[tuple[int, int, int]] = []  # (param, first byte, last byte + 1)
        written_torch: list[Any] = []
        np = self._np
        for index, value in zip(plan.caller, args, strict=True):
            param = plan.params[index]
            if not param.is_tensor:
                full[index] = self._check_scalar(param, value)
                continue
            value = self._as_array(param, value)
            if is_torch(value):
                value = torch_argument(param, value)
                if param.written:
                    written_torch.append(value)
            view = self._read_view(param, value)
            self._check_tensor(param, view, bindings, bound_by)
            spans.append(self._byte_span(param, view))
            if first_tensor is None:
                first_tensor = value
            writable = self._writable(value)
            if not writable and param.written:
                raise ValueError(
                    f"{param.where}: expected a writable array (the kernel writes this "
                    f"{param.role} parameter), got a read-only one"
                )
            if not writable:  # DLPack cannot export read-only numpy arrays: pass a copy
                value = self._aligned_copy(param, value, view)
            elif view.data_ptr % param.alignment:
                if param.written:
                    raise ValueError(
                        f"{param.where}: expected data aligned to {param.alignment} bytes, "
                        f"got address {view.data_ptr:#x} (offset "
                        f"{view.data_ptr % param.alignment}); the kernel writes this "
                        f"{param.role} parameter, so it cannot be copied: pass an array aligned "
                        f"to {param.alignment} bytes"
                        + (
                            ", or let the kernel allocate it (out_idx)"
                            if param.role == "output"
                            else ""
                        )
                    )
                value = self._aligned_copy(param, value, view)
            full[index] = launchable(self._compact_if_empty(value), np)
        if plan.check_aliasing:
            check_no_overlap(self.manifest.name, self.params, spans)
        outputs = []
        for index in plan.out_idx:
            param = plan.params[index]
            shape = tuple(d if isinstance(d, int) else bindings[d] for d in param.shape)
            check_index_range(param.where, self.manifest, shape, math.prod(shape))
            out = self.allocate(param.dtype.name, shape, like=first_tensor)
            full[index] = launchable(self._compact_if_empty(out), np)
            outputs.append(out)
        return PreparedCall(full, outputs, bindings, tuple(written_torch))

    # ------------------------------------------------------------------ pieces
    def _param(self, spec: ParamSpec | ParamPlan) -> ParamPlan:
        if isinstance(spec, ParamPlan):
            return spec
        return next(p for p in self.plan.params if p.name == spec.name)

    def _byte_span(self, param: ParamPlan, view: TensorView) -> tuple[int, int, int]:
        """Check the tensor's reach against the index width; return its byte range."""
        low, high = element_span(view.shape, view.strides)
        check_index_range(param.where, self.manifest, view.shape, high - low)
        size = param.dtype.itemsize
        return param.index, view.data_ptr + low * size, view.data_ptr + high * size

    def _check_scalar(self, param: ParamPlan, value: object) -> int | float | bool:
        np = self._np
        where = param.where
        info = param.dtype
        if info.kind == "bool":
            if isinstance(value, bool) or (np is not None and isinstance(value, np.bool_)):
                return bool(value)
            raise TypeError(f"{where}: expected a bool scalar, got {describe(value)}")
        integral = isinstance(value, int) and not isinstance(value, bool)
        if np is not None and isinstance(value, np.integer):
            integral = True
        if info.is_integer:
            if not integral:
                raise TypeError(
                    f"{where}: expected an int scalar ({info.name}), got {describe(value)}"
                )
            number = int(cast(SupportsIndex, value))
            low, high = info.low, info.high
            if not low <= number <= high:  # type: ignore[operator]
                raise ValueError(
                    f"{where}: expected an int in [{low}, {high}] ({info.name}), got {number}"
                )
            return number
        is_float = isinstance(value, float) or (np is not None and isinstance(value, np.floating))
        if not (integral or is_float):
            raise TypeError(f"{where}: expected a real scalar ({info.name}), got {describe(value)}")
        try:
            number_f = float(cast(SupportsFloat, value))
        except OverflowError:  # an int beyond float64 (10**400)
            raise ValueError(
                f"{where}: expected a value representable as {info.name}, got an int of "
                f"{int(cast(SupportsIndex, value)).bit_length()} bits (beyond float64's range)"
            ) from None
        # Representable: rounds (to nearest, ties to even) to a finite value of the type.
        limit = info.overflow
        if limit is not None and math.isfinite(number_f) and not abs(number_f) < limit:
            raise ValueError(
                f"{where}: expected a value representable as {info.name}, got {number_f!r} "
                f"(a magnitude of {limit!r} or more rounds past its largest value {info.high!r})"
            )
        return number_f

    def _as_array(self, param: ParamPlan, value: Any) -> Any:
        """Buffer-protocol objects without DLPack (memoryview, array.array) become numpy views."""
        np = self._np
        if np is None or isinstance(value, np.ndarray) or hasattr(value, "__dlpack__"):
            return value
        try:
            buffer = memoryview(value)
        except TypeError:
            return value  # _read_view reports it
        try:
            return np.asarray(buffer)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"{param.where}: expected an array of {param.dtype.name}, got a "
                f"{describe(value)} buffer numpy cannot view ({exc})"
            ) from None

    def tensor_view(self, spec: ParamSpec | ParamPlan, value: object) -> TensorView:
        """Read dtype, shape, strides, device and data pointer from a tensor argument.

        Raises:
            TypeError: ``value`` is not a DLPack producer (or numpy array), or its export
                fails; ValueError: its byte strides are not whole elements, or it lives on
                a device the kernel does not accept.
        """
        return self._read_view(self._param(spec), value)

    def _read_view(self, param: ParamPlan, value: object) -> TensorView:
        np = self._np
        if np is not None and isinstance(value, np.ndarray):
            if isinstance(value, np.ma.MaskedArray):
                raise TypeError(
                    f"{param.where}: expected an array without a mask, got a numpy masked "
                    "array (the kernel would read the masked elements' data and its result "
                    "would carry no mask); pass a.filled(value) or np.ma.getdata(a)"
                )
            return numpy_view(param, value)
        if not hasattr(value, "__dlpack__"):
            raise TypeError(
                f"{param.where}: expected an array supporting DLPack (numpy array, torch "
                f"tensor, ...) of {param.dtype.name}, got {describe(value)}"
            )
        reported = reported_device(value)
        if reported is not None and reported[0] not in self.device_types:
            # Refused before any export: exporting a device tensor may synchronize its stream.
            raise self._wrong_device(param, *reported)
        if is_torch(value):
            return torch_view(value)
        return dlpack_view(param, value)

    def _wrong_device(self, param: ParamPlan, device_type: int, device_id: int) -> ValueError:
        return ValueError(
            f"{param.where}: expected a tensor on DLPack device type {self.device_types} "
            f"({'cpu' if self.device_types == (DLPACK_CPU,) else 'gpu'}), got device type "
            f"{device_type} (id {device_id})"
        )

    def _check_tensor(
        self,
        param: ParamPlan,
        view: TensorView,
        bindings: dict[str, int],
        bound_by: dict[str, str],
    ) -> None:
        where = param.where
        if not same_dtype(param, view.dtype):
            raise TypeError(f"{where}: expected dtype {param.dtype.name}, got {view.dtype}")
        if len(view.shape) != len(param.shape):
            raise ValueError(
                f"{where}: expected rank {len(param.shape)} (shape {list(param.shape)}), got "
                f"rank {len(view.shape)} (shape {list(view.shape)})"
            )
        for axis, (want, got) in enumerate(zip(param.shape, view.shape, strict=True)):
            self._bind(where, f"dim {axis}", want, got, bindings, bound_by, param.name)
        if view.device_type not in self.device_types:
            raise self._wrong_device(param, view.device_type, view.device_id)
        if param.strides is None and 0 not in view.shape:  # zero-size: no element is addressed
            expected = 1
            for axis in range(len(view.shape) - 1, -1, -1):
                if view.shape[axis] != 1 and view.strides[axis] != expected:
                    advice = (
                        f"the kernel writes this {param.role} parameter in place, so pass a "
                        "contiguous array and read the result from it (a contiguous copy made "
                        "for the call would hide the update)"
                        if param.written
                        else "pass np.ascontiguousarray(x) or x.contiguous()"
                    )
                    raise ValueError(
                        f"{where}: expected a C-contiguous array, got strides {list(view.strides)} "
                        f"(elements) for shape {list(view.shape)}; {advice}"
                    )
                expected *= view.shape[axis]
        elif param.strides is not None:
            empty = 0 in view.shape  # no element addressed: strides are free (torch zeroes them)
            for axis, (want, got) in enumerate(zip(param.strides, view.strides, strict=True)):
                if empty and (isinstance(want, int) or want in bindings):
                    continue
                self._bind(where, f"stride {axis}", want, got, bindings, bound_by, param.name)
            if param.written:
                check_no_self_overlap(where, view.shape, view.strides)

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
        """A zero-size array re-viewed with the compact strides of its shape.

        numpy and torch stride a zero-size array as if each 0 extent were 1 (numpy
        ``(5, 0)`` float32: ``(4, 4)``); TVM-built kernels check the exact products of
        the extents to their right (``(0, 1)`` elements) and refuse anything else as "not
        a compact array". The data is never read, so a view with those strides is the
        same argument.
        """
        strides = compact_strides(tuple(int(d) for d in value.shape))
        if is_torch(value):
            if value.numel() or tuple(value.stride()) == strides:
                return value
            return value.new_empty_strided(value.shape, strides)
        np = self._np
        if np is None or not isinstance(value, np.ndarray) or value.size:
            return value
        step = value.dtype.itemsize
        byte_strides = tuple(stride * step for stride in strides)
        if value.strides == byte_strides:
            return value
        return np.lib.stride_tricks.as_strided(value, value.shape, byte_strides)

    def _aligned_copy(self, param: ParamPlan, value: Any, view: TensorView) -> Any:
        """An aligned copy of an input, laid out as its parameter declares.

        C-contiguous for a parameter without declared strides; else with the argument's
        element strides (already checked equal to the declared ones), since the kernel
        indexes with the declared strides. A torch input of a C-contiguous parameter is
        copied with torch (numpy has no bfloat16 or float8 of its own).
        """
        if is_torch(value) and (param.strides is None or not value.numel()):
            return self._aligned_torch(param, view.shape, value.device).copy_(value)
        np = self._np
        if np is None:
            raise ValueError(
                f"{param.where}: expected data aligned to {param.alignment} bytes; copying "
                "a misaligned input needs numpy, which is not installed"
            )
        source = value if isinstance(value, np.ndarray) else np.from_dlpack(value)
        if param.strides is None or not source.size:
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

    def _aligned_torch(self, param: ParamPlan, shape: tuple[int, ...], device: Any) -> Any:
        """An uninitialized C-contiguous torch tensor aligned to ``allocation_alignment``."""
        import torch

        alignment = self.allocation_alignment
        nbytes = math.prod(shape) * param.dtype.itemsize
        raw = torch.empty(nbytes + alignment, dtype=torch.uint8, device=device)
        offset = (-raw.data_ptr()) & (alignment - 1)
        return raw[offset : offset + nbytes].view(torch_dtype(torch, param.dtype)).view(shape)

    def _aligned_empty(self, np: ModuleType, dtype: Any, shape: tuple[int, ...]) -> Any:
        from tvm_ffi import from_dlpack

        alignment = self.allocation_alignment
        dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        raw = np.empty(nbytes + alignment, dtype=np.uint8)
        # the tvm-ffi view reads the address several times faster than raw.ctypes.data
        offset = (-from_dlpack(raw, require_alignment=0).data_ptr()) & (alignment - 1)
        return self._compact_if_empty(raw[offset : offset + nbytes].view(dtype).reshape(shape))

    def allocate(self, dtype: str, shape: tuple[int, ...], like: Any) -> Any:
        """Allocate an output with the library of ``like`` (numpy by default).

        numpy outputs are aligned to ``allocation_alignment`` (64 bytes, or the largest
        alignment a parameter declares if that is more); bfloat16 and float8 outputs are
        ``ml_dtypes`` arrays.

        torch tensors in give a torch tensor on the same device; any other producer, or no
        tensor argument, gives a numpy array.

        Raises:
            RuntimeError: numpy (or, for bfloat16/float8, ml_dtypes) is needed but not
                installed.
        """
        info = dtype_info(dtype)
        if like is not None and outputs_follow(type(like)):
            import importlib

            torch = importlib.import_module("torch")  # reached only when torch tensors came in
            out = torch.empty(shape, dtype=torch_dtype(torch, info), device=like.device)
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
        np_dtype = numpy_dtype(info)
        if np_dtype is None:
            missing = "ml_dtypes" if optional_ml_dtypes() is None else "numpy"
            raise RuntimeError(
                f"{self.manifest.name}: allocating output ({dtype}, {list(shape)}) as a numpy "
                f"array needs {missing}, which is not installed; pass torch tensors or install it"
            )
        return self._aligned_empty(np, np_dtype, shape)
