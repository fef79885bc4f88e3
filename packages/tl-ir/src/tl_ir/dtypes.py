"""Dtype helpers: the kernel language's dtype names, their numpy dtypes and bit widths."""

from __future__ import annotations

from typing import Any

import numpy as np

from tl_ir.errors import UnknownDtypeError

__all__ = [
    "DTYPE_NAMES",
    "bits",
    "is_float",
    "is_int",
    "normalize_dtype",
    "numpy_dtype",
]

_BITS: dict[str, int] = {
    "float16": 16,
    "bfloat16": 16,
    "float32": 32,
    "float64": 64,
    "int8": 8,
    "int16": 16,
    "int32": 32,
    "int64": 64,
    "uint8": 8,
    "uint16": 16,
    "uint32": 32,
    "uint64": 64,
    "bool": 1,
}

#: Every dtype name the language accepts, in a stable order.
DTYPE_NAMES: tuple[str, ...] = tuple(_BITS)

_ALIASES: dict[str, str] = {
    "half": "float16",
    "float": "float32",
    "double": "float64",
    "fp16": "float16",
    "bf16": "bfloat16",
    "fp32": "float32",
    "fp64": "float64",
}


def normalize_dtype(dtype: Any) -> str:
    """Return the canonical dtype name of ``dtype``.

    Args:
        dtype: a name (``"float16"``, ``"half"``), a numpy dtype or scalar type,
            a TVM dtype object, or a `T.float16`-style constructor.

    Raises:
        UnknownDtypeError: the value names no dtype of the language.
    """
    if isinstance(dtype, str):
        name = _ALIASES.get(dtype, dtype)
        if name in _BITS:
            return name
        raise UnknownDtypeError(
            f"dtype {dtype!r} does not exist; expected one of {', '.join(DTYPE_NAMES)}"
        )
    if isinstance(dtype, np.dtype) or (isinstance(dtype, type) and issubclass(dtype, np.generic)):
        return normalize_dtype(np.dtype(dtype).name)
    # T.float16 and friends are TVM constructors carrying their dtype name.
    for attr in ("_dtype_str", "dtype"):
        value = getattr(dtype, attr, None)
        if isinstance(value, str) and _ALIASES.get(value, value) in _BITS:
            return _ALIASES.get(value, value)
    text = str(dtype)
    if text in _BITS:
        return text
    raise UnknownDtypeError(
        f"expected a dtype (one of {', '.join(DTYPE_NAMES)}), got {dtype!r} "
        f"of type {type(dtype).__name__}"
    )


def bits(dtype: Any) -> int:
    """Bit width of one element of ``dtype`` (``bool`` is 1). Raises `UnknownDtypeError`."""
    return _BITS[normalize_dtype(dtype)]


def numpy_dtype(dtype: Any) -> np.dtype[Any]:
    """The numpy dtype holding ``dtype`` elements.

    ``bfloat16`` has no numpy type: it maps to ``uint16`` (the same bits).
    Raises `UnknownDtypeError` for unknown names.
    """
    name = normalize_dtype(dtype)
    if name == "bfloat16":
        return np.dtype("uint16")
    return np.dtype(name)


def is_float(dtype: Any) -> bool:
    """Whether ``dtype`` is a floating-point type (bfloat16 included)."""
    return normalize_dtype(dtype) in ("float16", "bfloat16", "float32", "float64")


def is_int(dtype: Any) -> bool:
    """Whether ``dtype`` is a signed or unsigned integer type (bool excluded)."""
    name = normalize_dtype(dtype)
    return name.startswith(("int", "uint"))
