"""Front-end error classes: every mistake in a kernel surfaces as a `TileLangError`.

Each error carries the kernel's ``filename``, ``lineno`` and the offending
``source_line`` once the parser has located it; ``str(err)`` shows all three
plus a message saying what was expected and what came.
"""

from __future__ import annotations

__all__ = [
    "KernelDtypeError",
    "KernelSyntaxError",
    "KernelTypeError",
    "KernelValueError",
    "ScopeError",
    "ShapeMismatchError",
    "TileLangError",
    "TileLangInternalError",
    "UnknownDtypeError",
    "UnsupportedDtypeError",
    "UnsupportedError",
]


class TileLangError(Exception):
    """Base class of every front-end error raised by `tl_ir`.

    Args:
        message: what was expected and what came instead.
        filename: the kernel's source file, when known.
        lineno: the 1-based line of the offending statement, when known.
        source_line: the text of that line, when known.
    """

    def __init__(
        self,
        message: str,
        *,
        filename: str | None = None,
        lineno: int | None = None,
        source_line: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.filename = filename
        self.lineno = lineno
        self.source_line = source_line

    @property
    def located(self) -> bool:
        """Whether the error already names a file and line."""
        return self.filename is not None and self.lineno is not None

    def locate(self, filename: str, lineno: int, source_line: str | None) -> None:
        """Attach a source location unless one is already attached (innermost wins)."""
        if self.located:
            return
        self.filename = filename
        self.lineno = lineno
        self.source_line = source_line

    def __str__(self) -> str:
        if not self.located:
            return self.message
        text = f"{self.filename}:{self.lineno}: {self.message}"
        if self.source_line:
            text += f"\n    {self.source_line.strip()}"
        return text


class KernelSyntaxError(TileLangError):
    """A construct the kernel language does not accept (unknown name, bad statement form)."""


class KernelTypeError(TileLangError):
    """An operand of the wrong kind: a wrong dtype, a non-buffer where a tile is needed,
    a run-time value where a compile-time constant is needed."""


class KernelValueError(KernelTypeError, ValueError):
    """An operand of the right kind with a value the operation does not take (an
    unknown rounding mode): also a ``ValueError``, as TileLang raises it."""


class KernelDtypeError(KernelTypeError, TypeError):
    """An operand whose dtype the operation does not take (an integer given to a
    floating-point function): also a ``TypeError``, as TileLang raises it."""


class UnknownDtypeError(KernelTypeError):
    """A dtype name that does not exist."""


class ShapeMismatchError(TileLangError):
    """Tile shapes that cannot match (copy extents, gemm inner dims, reduce dims)."""


class ScopeError(TileLangError):
    """A construct used where it is not allowed (a shared/fragment tile outside `T.Kernel`)."""


class UnsupportedError(TileLangError, NotImplementedError):
    """A construct that is valid TileLang but not supported by this implementation (also a
    `NotImplementedError`, naming the missing feature)."""


class UnsupportedDtypeError(UnknownDtypeError, UnsupportedError):
    """A TileLang dtype (``int4``, ``float4_e2m1fn``, ``int8x4``...) that this language
    does not support as a storage type: both an `UnknownDtypeError` (it names no dtype
    of the language) and an `UnsupportedError` (a `NotImplementedError`)."""


class TileLangInternalError(TileLangError):
    """A bug in tl_ir itself surfaced while parsing this statement (the original
    exception is chained); please report it with the kernel."""


_FALSE_WORDS = frozenset({"", "0", "false", "no", "off"})


def at_users_line(error: TileLangError) -> TileLangError:
    """``error`` with the compiler's frames dropped, for re-raising at the kernel's entry.

    A kernel-language error already names the kernel's file and line; the parser frames
    below the user's call help no one. The chained cause (TVM's parser error) is kept,
    without its frames. ``TileLangInternalError`` (a bug in tl_ir) and ``TL_TRACEBACK=1``
    keep everything.
    """
    import os

    if isinstance(error, TileLangInternalError):
        return error
    if os.environ.get("TL_TRACEBACK", "").strip().lower() not in _FALSE_WORDS:
        return error
    cause = error.__cause__
    if cause is not None:
        cause.with_traceback(None)
        cause.__suppress_context__ = True
    return error.with_traceback(None)
