"""TileLang's ``TensorSupplyType``: how a profiler fills the inputs it generates.

TileLang programs write ``kernel.get_profiler(tensor_supply_type=tilelang.TensorSupplyType.Randn)``
(or ``Integer``, ``Uniform``, ``Normal``, ``Zero``, ``One``, ``Auto``). The values each kind
draws, per dtype, follow TileLang's meaning:

* ``Integer``: unsigned ints and float8 drawn as small integers (0..2 unsigned,
  -128..127 for float8), ``bool`` 0/1, every other dtype (floats included) the
  integers -2..2;
* ``Uniform``: uniform in [-1, 1); ``Normal``: normal with mean -1 and standard
  deviation 1 (TileLang's ``normal_(-1.0, 1.0)``); int8 under either is all ones;
* ``Randn``: standard normal; ``Zero``/``One``: all zeros/ones;
* ``Auto``: as ``Integer``, except float16/bfloat16/float32 uniform in [-1, 1).

Values are drawn from the profiler's seeded generator (numpy), so the same seed gives the
same inputs on every run.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

__all__ = ["TensorSupplyType", "checked_supply", "supplied_values"]


class TensorSupplyType(enum.Enum):
    """The kinds of generated inputs (TileLang's names and numbers)."""

    Integer = 1
    Uniform = 2
    Normal = 3
    Randn = 4
    Zero = 5
    One = 6
    Auto = 7


def checked_supply(value: object) -> TensorSupplyType | None:
    """``value`` as a `TensorSupplyType` (None stays None: the profiler's own inputs).

    Accepts a member or a member's name (``"Randn"``).

    Raises:
        ValueError: a string that names no member.
        TypeError: anything else.
    """
    if value is None or isinstance(value, TensorSupplyType):
        return value
    if isinstance(value, str):
        try:
            return TensorSupplyType[value]
        except KeyError:
            raise ValueError(
                f"tensor_supply_type: expected one of "
                f"{[member.name for member in TensorSupplyType]}, got {value!r}"
            ) from None
    raise TypeError(
        f"tensor_supply_type: expected a tl_jit.TensorSupplyType, its name or None, got "
        f"{value!r} of type {type(value).__name__}"
    )


def _small_integers(
    kind: TensorSupplyType, shape: Sequence[int], dtype: str, rng: np.random.Generator
) -> np.ndarray[Any, Any]:
    """The integer draws of ``Integer`` and ``Auto``, as float32 or the dtype's ints."""
    import numpy as np

    if dtype == "bool":
        return rng.integers(0, 2, size=shape, dtype=np.uint8).astype(np.bool_)
    if dtype.startswith("uint"):
        return rng.integers(0, 3, size=shape, dtype=np.uint8)
    if dtype.startswith("float8"):
        return rng.integers(-128, 128, size=shape, dtype=np.int16).astype(np.float32)
    if kind is TensorSupplyType.Auto and dtype in ("float16", "bfloat16", "float32"):
        return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)
    return rng.integers(-2, 3, size=shape, dtype=np.int8)


def supplied_values(
    kind: TensorSupplyType, shape: Sequence[int], dtype: str, rng: np.random.Generator
) -> np.ndarray[Any, Any]:
    """The values of one generated input of ``kind``, before conversion to ``dtype``.

    Returns a numpy array of ``shape`` holding exactly representable values: small ints
    (int8/uint8/bool) or floats (float32, float64 for float64). The caller converts it to
    the parameter's dtype (`tl_jit.profiler_inputs.random_array`).
    """
    import numpy as np

    if kind in (TensorSupplyType.Integer, TensorSupplyType.Auto):
        return _small_integers(kind, shape, dtype, rng)
    if kind is TensorSupplyType.Zero:
        return np.zeros(shape, dtype=np.int8)
    if kind is TensorSupplyType.One:
        return np.ones(shape, dtype=np.int8)
    if dtype == "int8" and kind in (TensorSupplyType.Uniform, TensorSupplyType.Normal):
        return np.ones(shape, dtype=np.int8)
    draw = np.float64 if dtype == "float64" else np.float32
    if kind is TensorSupplyType.Uniform:
        return rng.uniform(-1.0, 1.0, size=shape).astype(draw)
    if kind is TensorSupplyType.Normal:
        return rng.normal(-1.0, 1.0, size=shape).astype(draw)
    return rng.standard_normal(size=shape, dtype=draw)  # Randn
