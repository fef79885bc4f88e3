"""The runtime's one dtype table: every fact about an element type, in one place.

Each entry of ``DTYPE_TABLE`` says, for one dtype name a manifest may declare: its kind
and width, its DLPack type code, the buffer-protocol format characters numpy reports for
it (none for the ``ml_dtypes`` types, which numpy's buffer export refuses), which module
defines its numpy dtype (numpy itself or ``ml_dtypes``), its torch name, and the range of
a scalar of that type. The manifest's vocabulary (``tl_runtime.manifest.DTYPES``), the
argument checker, the generated fast path and the Cython launcher all read this table.

``DTYPE_ALIASES`` maps other spellings of a dtype to its name here (TileLang writes
``float8_e4m3`` for ``float8_e4m3fn``); ``dtype_info`` resolves them.

numpy, ml_dtypes and torch are imported only by the functions that need them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType, ModuleType
from typing import Any

# DLPack type codes (dlpack.h, DLDataTypeCode).
DLPACK_INT = 0
DLPACK_UINT = 1
DLPACK_FLOAT = 2
DLPACK_BFLOAT = 4
DLPACK_COMPLEX = 5
DLPACK_BOOL = 6
DLPACK_FLOAT8_E4M3FN = 10
DLPACK_FLOAT8_E5M2 = 12


@dataclass(frozen=True)
class DtypeInfo:
    """What the runtime knows of one element type.

    Attributes:
        name: the canonical name (a key of ``DTYPE_TABLE``).
        kind: ``"bool"``, ``"int"``, ``"uint"`` or ``"float"``.
        bits: bits per element.
        dlpack_code: the DLPack ``DLDataTypeCode`` of the type.
        buffer_formats: the buffer-protocol format characters numpy reports for arrays of
            it ("" when numpy cannot export it through the buffer protocol: ml_dtypes types).
        numpy_module: ``"numpy"`` or ``"ml_dtypes"``: where its numpy dtype is defined.
        torch_name: the attribute of ``torch`` naming it, or None when torch has none.
        low: the smallest scalar value (integer types; None for others).
        high: the largest scalar value (integer types), or the largest finite value
            (floating types; None for float64, whose range is Python's).
        overflow: (floating types but float64) the smallest magnitude that rounds past
            ``high`` (round to nearest, ties to even, as numpy and ml_dtypes convert): a
            finite value ``x`` converts to a finite value of the type iff
            ``abs(x) < overflow`` (float32: ``2**128 * (1 - 2**-25)``, ``high`` plus half
            an ulp; ``3.4028235e38``, how numpy prints ``high``, is below it). None for the
            other types.
    """

    name: str
    kind: str
    bits: int
    dlpack_code: int
    buffer_formats: str
    numpy_module: str
    torch_name: str | None
    low: int | None = None
    high: int | float | None = None
    overflow: float | None = None

    @property
    def itemsize(self) -> int:
        """Bytes per element (``bool`` is one byte)."""
        return max(self.bits // 8, 1)

    @property
    def is_integer(self) -> bool:
        """Whether scalars of this type are integers (``int``/``uint``, not ``bool``)."""
        return self.kind in ("int", "uint")

    @property
    def needs_ml_dtypes(self) -> bool:
        """Whether numpy arrays of this type are ``ml_dtypes`` arrays (no buffer format,
        no DLPack export of their own)."""
        return self.numpy_module == "ml_dtypes"


def _int(name: str, bits: int, signed: bool, formats: str) -> DtypeInfo:
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    code = DLPACK_INT if signed else DLPACK_UINT
    return DtypeInfo(
        name, "int" if signed else "uint", bits, code, formats, "numpy", name, low, high
    )


_ENTRIES = (
    DtypeInfo("bool", "bool", 8, DLPACK_BOOL, "?", "numpy", "bool"),
    _int("int8", 8, True, "b"),
    _int("int16", 16, True, "h"),
    _int("int32", 32, True, "i"),
    _int("int64", 64, True, "lq"),
    _int("uint8", 8, False, "B"),
    _int("uint16", 16, False, "H"),
    _int("uint32", 32, False, "I"),
    _int("uint64", 64, False, "LQ"),
    DtypeInfo(
        "float16",
        "float",
        16,
        DLPACK_FLOAT,
        "e",
        "numpy",
        "float16",
        high=65504.0,
        overflow=65520.0,  # 65504 + 2**4; 65520 itself is a tie, which rounds to inf
    ),
    DtypeInfo(
        "bfloat16",
        "float",
        16,
        DLPACK_BFLOAT,
        "",
        "ml_dtypes",
        "bfloat16",
        high=3.3895313892515355e38,
        overflow=2.0**128 * (1 - 2.0**-9),
    ),
    DtypeInfo(
        "float32",
        "float",
        32,
        DLPACK_FLOAT,
        "f",
        "numpy",
        "float32",
        high=3.4028234663852886e38,
        overflow=2.0**128 * (1 - 2.0**-25),
    ),
    DtypeInfo("float64", "float", 64, DLPACK_FLOAT, "d", "numpy", "float64"),
    DtypeInfo(
        "float8_e4m3fn",
        "float",
        8,
        DLPACK_FLOAT8_E4M3FN,
        "",
        "ml_dtypes",
        "float8_e4m3fn",
        high=448.0,
        # 464 (448 + half an ulp) is a tie that rounds to 448, the even neighbour (480 is
        # no value: this type has no inf, and the bit pattern is NaN): only above it overflows
        overflow=math.nextafter(464.0, math.inf),
    ),
    DtypeInfo(
        "float8_e5m2",
        "float",
        8,
        DLPACK_FLOAT8_E5M2,
        "",
        "ml_dtypes",
        "float8_e5m2",
        high=57344.0,
        overflow=61440.0,
    ),
)

DTYPE_TABLE: Mapping[str, DtypeInfo] = MappingProxyType({info.name: info for info in _ENTRIES})
"""Every dtype a parameter may declare, by canonical name."""

DTYPE_ALIASES: Mapping[str, str] = MappingProxyType({"float8_e4m3": "float8_e4m3fn"})
"""Other spellings accepted where a dtype name is taken -> the canonical name."""

_BY_DLPACK = {(info.dlpack_code, info.bits): info for info in _ENTRIES}
_DLPACK_CODE_NAMES = {
    DLPACK_INT: "int",
    DLPACK_UINT: "uint",
    DLPACK_FLOAT: "float",
    3: "opaque handle",
    DLPACK_BFLOAT: "bfloat",
    DLPACK_COMPLEX: "complex",
    DLPACK_BOOL: "bool",
    7: "float8_e3m4",
    8: "float8_e4m3",
    9: "float8_e4m3b11fnuz",
    10: "float8_e4m3fn",
    11: "float8_e4m3fnuz",
    12: "float8_e5m2",
    13: "float8_e5m2fnuz",
    14: "float8_e8m0fnu",
}


def canonical_dtype(name: object) -> str | None:
    """The canonical name of dtype ``name`` (aliases resolved), or None when unknown."""
    if not isinstance(name, str):
        return None
    name = DTYPE_ALIASES.get(name, name)
    return name if name in DTYPE_TABLE else None


def dtype_info(name: str) -> DtypeInfo:
    """The table entry of ``name`` (a canonical name or an alias).

    Raises:
        KeyError: ``name`` is no dtype of the table (manifests are validated against it,
            so a loaded kernel's dtypes always resolve).
    """
    return DTYPE_TABLE[DTYPE_ALIASES.get(name, name)]


def dlpack_dtype_name(code: int, bits: int, lanes: int = 1) -> str:
    """A readable name for a DLPack dtype (for messages): ``float32``, ``complex64``...

    Types outside the table are named by their DLPack code too (``complex128``,
    ``float8_e4m3fnuz``), never as a bare type code.
    """
    info = _BY_DLPACK.get((code, bits))
    base = info.name if info is not None else None
    if base is None:
        family = _DLPACK_CODE_NAMES.get(code, f"DLPack type code {code}")
        base = family if family.startswith("float8") else f"{family}{bits}"
    return base if lanes == 1 else f"{base}x{lanes}"


def dlpack_dtype_info(code: int, bits: int) -> DtypeInfo | None:
    """The table entry of a DLPack ``(code, bits)`` pair, or None."""
    return _BY_DLPACK.get((code, bits))


def optional_ml_dtypes() -> ModuleType | None:
    """The ``ml_dtypes`` module (a dependency of tl-runtime), or None when not importable."""
    try:
        import ml_dtypes
    except ImportError:
        return None
    return ml_dtypes


def numpy_dtype(info: DtypeInfo) -> Any:
    """The numpy dtype of ``info``, or None when numpy (or, for its types, ml_dtypes) is absent."""
    try:
        import numpy
    except ImportError:
        return None
    if info.needs_ml_dtypes:
        ml_dtypes = optional_ml_dtypes()
        if ml_dtypes is None:
            return None
        return numpy.dtype(getattr(ml_dtypes, info.name))
    return numpy.dtype(info.name)


def torch_dtype(torch: ModuleType, info: DtypeInfo) -> Any:
    """The torch dtype of ``info``.

    Raises:
        NotImplementedError: this torch has no such dtype (naming the dtype and version).
    """
    value = getattr(torch, info.torch_name or "", None)
    if value is None:
        raise NotImplementedError(
            f"dtype {info.name} as a torch tensor: torch {torch.__version__} has no "
            f"torch.{info.torch_name or info.name}"
        )
    return value
