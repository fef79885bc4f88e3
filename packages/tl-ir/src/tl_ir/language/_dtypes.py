"""Dtype objects of the kernel language: ``T.float16``, ``T.dtype``, ``T.float``...

As in TileLang, a dtype object is a string (``T.uint8 == "uint8"``, usable wherever a
dtype name goes: allocations, ``T.cast``, ``T.infinity``, numpy) that can also be
called to make a value: ``T.float32(0)`` is a constant, ``T.int32()`` a fresh scalar
variable, and ``alpha: T.float32`` declares a scalar parameter. ``T.dtype`` is their
type and converts any dtype-like value (``T.dtype("half")``, ``T.dtype(np.float16)``);
it also serves as the annotation of a builder argument that holds a dtype.
"""

from __future__ import annotations

import builtins as _builtins
import contextlib
import math
from typing import Any, cast

import tvm_ffi
from tvm import tirx
from tvm.script import tirx as _tvm_T

from tl_ir.dtypes import DTYPE_NAMES, normalize_dtype, rounded_constant
from tl_ir.errors import KernelTypeError
from tl_ir.language._operands import scalar_operand_problem

__all__ = ["DTYPE_ALIASES", "dtype", "make_dtype_objects"]

#: TileLang's C-style dtype names and what they stand for.
DTYPE_ALIASES: dict[str, str] = {
    "short": "int16",
    "int": "int32",
    "uint": "uint32",
    "long": "int64",
    "half": "float16",
    "float": "float32",
    "double": "float64",
    "float8_e4m3": "float8_e4m3fn",
}


class dtype(tvm_ffi.dtype):
    """A dtype of the kernel language: a ``str`` of the canonical name that is also a
    value constructor.

    ``dtype(value)`` accepts anything `tl_ir.normalize_dtype` does and raises
    `UnknownDtypeError` otherwise.
    """

    __slots__ = ()

    def __new__(cls, value: Any) -> dtype:
        return cast("dtype", super().__new__(cls, normalize_dtype(value)))

    def __call__(self, *args: Any) -> Any:
        """``T.float32(x)``: the constant or expression ``x`` of this dtype;
        ``T.int32()``: a fresh scalar variable; several args: a vector of them."""
        if len(args) > 1:
            return tirx.Shuffle(list(args), list(range(len(args))))
        value = args[0] if args else None
        if args:
            value = self._checked_value(value)
        if isinstance(value, _builtins.bool | int) and str(self) != "bool":
            return tirx.const(value, str(self))
        if isinstance(value, _builtins.float) and str(self).startswith(("float", "bfloat")):
            # A constant of this dtype, rounded to it (TVM's constructors went through a
            # float32 literal: T.float64(1e308) was refused as beyond float32's range).
            return tirx.const(rounded_constant(value, self), str(self))
        constructor = getattr(_tvm_T, str(self), None)
        if constructor is None:
            # TVM offers no constructor for this dtype: only constants and casts.
            if value is None:
                raise TypeError(f"T.{self}() cannot make a scalar variable of dtype {self}")
            if isinstance(value, _builtins.float):
                return tirx.const(value, str(self))
            return tirx.Cast(str(self), value)
        return constructor(value)

    def _checked_value(self, value: Any) -> Any:
        """``value`` as ``T.<dtype>(value)`` converts it: a float dtype reads a string
        as Python's ``float`` does (``T.float32("-inf")``, as TVM's constructors and
        TVMScript's printer spell it). Refused: ``None`` (TVM made a fresh variable no
        parameter defines), anything else not a scalar, a NaN or infinity for an
        integer dtype."""
        if isinstance(value, str) and str(self).startswith(("float", "bfloat")):
            with contextlib.suppress(ValueError):  # if not a number: refused below
                value = _builtins.float(value)
        problem = scalar_operand_problem(value)
        if problem is not None:
            raise KernelTypeError(
                f"T.{self}(value): expected a scalar value or expression, got {problem} "
                f"(T.{self}() with no argument declares a scalar variable)"
            )
        if (
            isinstance(value, _builtins.float)
            and not math.isfinite(value)
            and not str(self).startswith(("float", "bfloat"))
        ):
            raise KernelTypeError(
                f"T.{self}({value}): {self} cannot hold {value}; T.cast(x, {str(self)!r}) "
                "converts a float as the GPUs do (NaN gives 0, an infinity the nearest limit)"
            )
        return value

    @property
    def bytes(self) -> int:
        """Bytes per element (at least 1)."""
        return _builtins.max(1, int(self.bits) // 8)

    def as_torch(self) -> Any:
        """The ``torch.dtype`` of this dtype (TileLang's ``T.float16.as_torch()`` is
        ``torch.float16``); torch is imported only now.

        Raises:
            ImportError: torch is not installed.
            TypeError: the installed torch has no dtype of this name (naming it and the
                torch version).
        """
        name = str(self)
        try:
            import torch
        except ImportError as error:
            raise ImportError(
                f"T.{name}.as_torch(): torch is not installed; install torch to get torch.{name}"
            ) from error
        value = getattr(torch, name, None)
        if not isinstance(value, torch.dtype):
            raise TypeError(
                f"T.{name}.as_torch(): torch {torch.__version__} has no dtype torch.{name}"
            )
        return value


def make_dtype_objects() -> dict[str, dtype]:
    """Every dtype object ``T`` exports, by name: the canonical names and the aliases."""
    objects = {name: dtype(name) for name in DTYPE_NAMES}
    objects.update({alias: objects[target] for alias, target in DTYPE_ALIASES.items()})
    return objects
