"""Dtype helpers: the kernel language's dtype names, their numpy dtypes and bit widths."""

from __future__ import annotations

from typing import Any

import numpy as np

from tl_ir.errors import UnknownDtypeError, UnsupportedDtypeError

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
    "float8_e4m3fn": 8,
    "float8_e5m2": 8,
}

#: Dtypes without a numpy type of their own: held in numpy as unsigned ints of the
#: same width (the same bits).
_STORAGE_AS_UINT: dict[str, str] = {
    "bfloat16": "uint16",
    "float8_e4m3fn": "uint8",
    "float8_e5m2": "uint8",
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
    # TileLang's C-style aliases (T.int, T.uint, T.long, T.short).
    "int": "int32",
    "uint": "uint32",
    "long": "int64",
    "ulong": "uint64",
    "short": "int16",
    # TileLang's float8_e4m3 is the CUDA (NVIDIA) e4m3: finite-only, NaN 0x7f/0xff.
    "float8_e4m3": "float8_e4m3fn",
}


def normalize_dtype(dtype: Any) -> str:
    """Return the canonical dtype name of ``dtype``.

    Args:
        dtype: a name (``"float16"``, ``"half"``, ``"int"``), a `T.float16`-style dtype
            object, a numpy or torch dtype, Python's ``bool``/``int``/``float``
            (``bool``, ``int32``, ``float32``), or a TVM dtype object.

    Raises:
        UnknownDtypeError: the value names no dtype of the language.
    """
    if isinstance(dtype, str):
        name = _ALIASES.get(dtype, dtype)
        if name in _BITS:
            return name
        if _is_tilelang_dtype(name):
            raise UnsupportedDtypeError(
                f"dtype {name!r} is a TileLang dtype that this implementation does not "
                f"support as a storage type (sub-byte, scaling-factor and vector "
                f"dtypes are not implemented); expected one of {', '.join(DTYPE_NAMES)}"
            )
        raise UnknownDtypeError(
            f"dtype {dtype!r} does not exist; expected one of {', '.join(DTYPE_NAMES)}"
        )
    for python_type, name in ((bool, "bool"), (int, "int32"), (float, "float32")):
        if dtype is python_type:  # TileLang reads Python's scalar types this way
            return name
    if type(dtype).__module__ == "torch":
        # torch.float16 -> "float16"; torch is never imported here.
        return normalize_dtype(str(dtype).removeprefix("torch."))
    if isinstance(dtype, np.dtype) or (isinstance(dtype, type) and issubclass(dtype, np.generic)):
        return normalize_dtype(np.dtype(dtype).name)
    # T.float16 and friends are TVM constructors carrying their dtype name.
    for attr in ("_dtype_str", "dtype"):
        value = getattr(dtype, attr, None)
        if isinstance(value, str) and _ALIASES.get(value, value) in _BITS:
            return _ALIASES.get(value, value)
        if isinstance(value, str) and _is_tilelang_dtype(_ALIASES.get(value, value)):
            return normalize_dtype(value)  # T.float4_e2m1fn: the same refusal as by name
    text = str(dtype)
    if text in _BITS:
        return text
    raise UnknownDtypeError(
        f"expected a dtype (one of {', '.join(DTYPE_NAMES)}), got {dtype!r} "
        f"of type {type(dtype).__name__}"
    )


def _is_tilelang_dtype(name: str) -> bool:
    """Whether ``name`` is one of the dtype names TileLang's language exports."""
    # Imported here: the language package builds on this module.
    from tl_ir.language._tilelang_names import TILELANG_NAMES

    return name in TILELANG_NAMES["dtypes"]


def bits(dtype: Any) -> int:
    """Bit width of one element of ``dtype`` (``bool`` is 1). Raises `UnknownDtypeError`."""
    return _BITS[normalize_dtype(dtype)]


def numpy_dtype(dtype: Any) -> np.dtype[Any]:
    """The numpy dtype holding ``dtype`` elements.

    ``bfloat16`` and the float8 types have no numpy type: they map to ``uint16`` and
    ``uint8`` (the same bits). Raises `UnknownDtypeError` for unknown names.
    """
    name = normalize_dtype(dtype)
    return np.dtype(_STORAGE_AS_UINT.get(name, name))


def compute_dtype(dtype: Any) -> np.dtype[Any]:
    """The numpy dtype that computes with ``dtype`` elements: `numpy_dtype`, except that
    ``bfloat16`` and the float8 types are ml_dtypes' (their arithmetic rounds to the
    type; the ``uint`` storage types of `numpy_dtype` would compute on the raw bits).

    Raises:
        UnknownDtypeError: an unknown name.
    """
    name = normalize_dtype(dtype)
    if name in _STORAGE_AS_UINT:
        import ml_dtypes

        narrow: np.dtype[Any] = np.dtype(getattr(ml_dtypes, name))
        return narrow
    return np.dtype(name)


def rounded_constant(value: float, dtype: Any) -> float:
    """``value`` as the nearest ``dtype`` value holds it (round to nearest, ties to
    even; beyond the largest finite value, infinity): a constant ``T.float16(1.0001)``
    is ``1.0`` and ``T.float32(3.4028235e38)`` is FLT_MAX, as the hardware would store
    them. float64 and non-float types: ``value`` as it is.
    """
    name = normalize_dtype(dtype)
    if name in ("float16", "float32"):
        with np.errstate(over="ignore"):
            return float(np.dtype(name).type(value))
    if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        import ml_dtypes

        with np.errstate(over="ignore", invalid="ignore"):
            return float(np.asarray(value, np.float32).astype(getattr(ml_dtypes, name)))
    return value


def is_float(dtype: Any) -> bool:
    """Whether ``dtype`` is a floating-point type (bfloat16 included)."""
    return normalize_dtype(dtype).startswith(("float", "bfloat"))


def is_int(dtype: Any) -> bool:
    """Whether ``dtype`` is a signed or unsigned integer type (bool excluded)."""
    name = normalize_dtype(dtype)
    return name.startswith(("int", "uint"))
