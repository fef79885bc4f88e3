"""Integer helpers TileLang programs import from the top-level package (``tilelang.cdiv``)."""

from __future__ import annotations

import operator


def cdiv(a: int, b: int) -> int:
    """``ceil(a / b)`` for Python integers (sizes in a kernel builder).

    Raises:
        TypeError: an argument is not an int (a symbolic size needs ``T.ceildiv``).
        ZeroDivisionError: ``b`` is 0.
    """
    a, b = _as_int(a, "a"), _as_int(b, "b")
    return -(-a // b)


def next_power_of_2(x: int) -> int:
    """The smallest power of two >= ``x`` (1 for ``x <= 1``).

    Raises:
        TypeError: ``x`` is not an int.
    """
    x = _as_int(x, "x")
    return 1 if x <= 1 else 1 << (x - 1).bit_length()


def _as_int(value: object, name: str) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{name}: expected an int, got bool {value!r}")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(
            f"{name}: expected an int, got {type(value).__name__} {value!r} "
            "(inside a kernel, use T.ceildiv for symbolic sizes)"
        ) from None
