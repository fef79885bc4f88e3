"""The arguments of the reference interpreter (`tl_ir.interpret.run`): scalars checked
and converted as the compiled kernels' argument checker (``tl_runtime.checking``)
does, with its error types and messages, and tensors viewed as numpy arrays (torch
bfloat16 and float8 tensors through their bits, which numpy cannot view directly).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import tvm
from tvm import tirx

from tl_ir.dtypes import compute_dtype, numpy_dtype
from tl_ir.interpret_scalars import cast_value, dtype_of, int_width

__all__ = ["bind_arguments", "kernel_name", "scalar_argument", "tensor_array"]

#: Per float dtype: (its largest finite value, the smallest magnitude that rounds past
#: it), as ``tl_runtime.dtypes.DTYPE_TABLE`` states them (``high``, ``overflow``).
_FLOAT_RANGES: dict[str, tuple[float, float]] = {
    "float16": (65504.0, 65520.0),
    "bfloat16": (3.3895313892515355e38, 2.0**128 * (1 - 2.0**-9)),
    "float32": (3.4028234663852886e38, 2.0**128 * (1 - 2.0**-25)),
    "float8_e4m3fn": (448.0, math.nextafter(464.0, math.inf)),
    "float8_e5m2": (57344.0, 61440.0),
}

#: Torch dtypes numpy cannot view -> the torch dtype of their bits.
_TORCH_BITS = {"bfloat16": "int16", "float8_e4m3fn": "uint8", "float8_e5m2": "uint8"}


def kernel_name(func: Any) -> str:
    """The kernel's name (its ``global_symbol``, else ``"main"``), as messages name it."""
    attrs = getattr(func, "attrs", None)
    if attrs is not None and "global_symbol" in attrs:
        return str(attrs["global_symbol"])
    return "main"


def _describe(value: object) -> str:
    kind = type(value)
    if kind.__module__ == "builtins":
        return kind.__name__
    return f"{kind.__module__}.{kind.__qualname__}"


def scalar_argument(where: str, dtype: str, value: Any) -> Any:
    """``value`` for a scalar parameter of ``dtype``, checked and converted as a compiled
    kernel's call does: a bool for ``bool``, an int in the dtype's range for integer
    dtypes, and for float dtypes a real number rounded to the dtype (to nearest, ties
    to even; inf and NaN pass). Other dtypes (handles): ``value`` as it is.

    Args:
        where: ``"<kernel>: parameter '<name>'"``, the messages' prefix.

    Raises:
        TypeError: a non-bool for ``bool``, a non-int (bool included) for an integer
            dtype, a non-real (bool included) for a float dtype.
        ValueError: an int outside the integer dtype's range; a finite number that
            rounds past the float dtype's largest value (or an int beyond float64's).
    """
    if dtype == "bool":
        if isinstance(value, bool | np.bool_):
            return bool(value)
        raise TypeError(f"{where}: expected a bool scalar, got {_describe(value)}")
    integral = isinstance(value, int | np.integer) and not isinstance(value, bool)
    width = int_width(dtype)
    if width is not None:
        if not integral:
            raise TypeError(f"{where}: expected an int scalar ({dtype}), got {_describe(value)}")
        number = int(value)
        signed = dtype.startswith("int")
        low = -(1 << (width - 1)) if signed else 0
        high = (1 << (width - 1)) - 1 if signed else (1 << width) - 1
        if not low <= number <= high:
            raise ValueError(f"{where}: expected an int in [{low}, {high}] ({dtype}), got {number}")
        return number
    if dtype != "float64" and dtype not in _FLOAT_RANGES:
        return value
    if not (integral or isinstance(value, float | np.floating)):
        raise TypeError(f"{where}: expected a real scalar ({dtype}), got {_describe(value)}")
    try:
        number_f = float(value)
    except OverflowError:  # an int beyond float64 (10**400)
        raise ValueError(
            f"{where}: expected a value representable as {dtype}, got an int of "
            f"{int(value).bit_length()} bits (beyond float64's range)"
        ) from None
    if dtype in _FLOAT_RANGES:
        high_f, limit = _FLOAT_RANGES[dtype]
        if math.isfinite(number_f) and not abs(number_f) < limit:
            raise ValueError(
                f"{where}: expected a value representable as {dtype}, got {number_f!r} "
                f"(a magnitude of {limit!r} or more rounds past its largest value {high_f!r})"
            )
    return cast_value(number_f, dtype)


def tensor_array(value: Any) -> np.ndarray[Any, Any]:
    """``value`` as a numpy array sharing its memory: ``numpy.asarray``, except that a
    torch bfloat16 or float8 tensor (which numpy cannot view) becomes its bits viewed
    as the ml_dtypes type of the same name.

    Raises:
        whatever ``numpy.asarray`` raises for ``value``.
    """
    if type(value).__module__.split(".")[0] == "torch":
        name = str(getattr(value, "dtype", "")).removeprefix("torch.")
        if name in _TORCH_BITS:
            torch = sys.modules["torch"]
            bits = np.asarray(value.view(getattr(torch, _TORCH_BITS[name])))
            return bits.view(compute_dtype(name))
    return np.asarray(value)


def bind_arguments(
    func: Any, args: Sequence[Any], env: dict[Any, Any], arrays: dict[Any, Any]
) -> None:
    """Bind ``func``'s parameters to ``args`` (one per parameter): a tensor's array (see
    `tensor_array`; bfloat16/float8 bits viewed as the ml_dtypes type) into ``arrays``
    and its symbolic dims into ``env``; a scalar, checked and converted by
    `scalar_argument`, into ``env``.

    Raises:
        ValueError: a tensor of the wrong rank, dtype or shape; a scalar out of range.
        TypeError: a scalar of the wrong kind.
    """
    name = kernel_name(func)
    for param, arg in zip(func.params, args, strict=True):
        ty = param.ty
        if not isinstance(ty, tirx.BufferType):
            where = f"{name}: parameter {str(param.name)!r}"
            env[param] = scalar_argument(where, dtype_of(param), arg)
            continue
        array = tensor_array(arg)
        if array.ndim != len(ty.shape):
            raise ValueError(
                f"run: {param.name} expects {len(ty.shape)} dims, got shape {array.shape}"
            )
        computed = compute_dtype(str(ty.dtype))
        if array.dtype != computed and array.dtype == numpy_dtype(str(ty.dtype)):
            array = array.view(computed)  # bfloat16/float8 bits: the same memory
        if array.dtype != computed:
            raise ValueError(f"run: {param.name} expects {ty.dtype}, got {array.dtype}")
        for dim, size in zip(ty.shape, array.shape, strict=True):
            if isinstance(dim, tvm.ir.Var):
                env[dim] = int(size)
            elif int(dim) != size:
                raise ValueError(f"run: {param.name} expects shape {tuple(ty.shape)}")
        arrays[param] = array
