"""Performance hints of TileLang's tile ops, checked and accepted everywhere.

A hint never changes what a kernel computes, so it never stops a kernel from
compiling: each is checked for its type (a misspelt value is a clear error naming the
parameter) and then has no effect on the IR. docs/language.md lists them. Targets
choose warp partitioning, copy instructions and memory orders themselves.
"""

from __future__ import annotations

import builtins as _builtins
import enum
from typing import Any

import numpy as np

from tl_ir import ops as _ops
from tl_ir.errors import KernelTypeError

__all__ = [
    "EVICTION_POLICIES",
    "MEMORY_ORDERS",
    "GemmWarpPolicy",
    "check_choice",
    "check_flag",
    "check_gemm_policy",
    "check_hint_types",
    "check_positive_int",
]

#: ``memory_order=`` values of TileLang's atomics (C++ memory orders).
MEMORY_ORDERS: tuple[str, ...] = ("relaxed", "consume", "acquire", "release", "acq_rel", "seq_cst")
#: ``eviction_policy=`` values of ``T.copy``.
EVICTION_POLICIES: tuple[str, ...] = ("evict_normal", "evict_first", "evict_last")


class GemmWarpPolicy(enum.IntEnum):
    """How ``T.gemm`` spreads a block's warps over the output tile (a GPU hint)."""

    Square = 0
    FullRow = 1
    FullCol = 2

    def is_square(self) -> bool:
        """Whether warps are balanced over rows and columns."""
        return self is GemmWarpPolicy.Square

    def is_full_row(self) -> bool:
        """Whether all warps are assigned to rows."""
        return self is GemmWarpPolicy.FullRow

    def is_full_col(self) -> bool:
        """Whether all warps are assigned to columns."""
        return self is GemmWarpPolicy.FullCol


def check_flag(value: Any, where: str) -> bool:
    """``value`` as a Python bool: a bool, a numpy bool, or an integer 0/1 (a constant
    expression too).

    Raises:
        KernelTypeError: anything else (``"yes"``, 2, a run-time expression), naming
            ``where``.
    """
    if isinstance(value, _builtins.bool | np.bool_):
        return _builtins.bool(value)
    const = _ops.const_int(value)
    if const in (0, 1):
        return const == 1
    raise KernelTypeError(f"{where}: expected a bool (True or False), got {value!r}")


def check_choice(value: Any, choices: tuple[str, ...], where: str) -> None:
    """Check an optional string hint against its allowed values.

    Raises:
        KernelTypeError: ``value`` is neither None nor one of ``choices``.
    """
    if value is not None and value not in choices:
        raise KernelTypeError(f"{where}: expected one of {', '.join(choices)}, got {value!r}")


def check_positive_int(value: Any, where: str, *, allow_none: bool = False) -> None:
    """Check an integer hint.

    Raises:
        KernelTypeError: ``value`` is not a positive int (or None when allowed).
    """
    if value is None and allow_none:
        return
    exact = _ops.exact_int(value)
    if isinstance(exact, _builtins.bool) or not isinstance(exact, int) or exact <= 0:
        raise KernelTypeError(f"{where}: expected a positive int, got {value!r}")


def check_gemm_policy(policy: Any) -> GemmWarpPolicy:
    """``policy`` as a `GemmWarpPolicy` (an enum member or its int value).

    Raises:
        KernelTypeError: anything else.
    """
    try:
        return GemmWarpPolicy(policy)
    except (ValueError, TypeError):
        raise KernelTypeError(
            "T.gemm(policy=...): expected a T.GemmWarpPolicy (Square, FullRow, FullCol), "
            f"got {policy!r}"
        ) from None


def check_hint_types(prefer_instruction: Any, annotations: Any) -> None:
    """Check the types of a tile op's ``prefer_instruction`` (a str or None) and
    ``annotations`` (a dict or None) hints; raise `KernelTypeError` naming the one that is
    not."""
    if prefer_instruction is not None and not isinstance(prefer_instruction, str):
        raise KernelTypeError(
            f"prefer_instruction=...: expected a str or None, got {prefer_instruction!r}"
        )
    if annotations is not None and not isinstance(annotations, dict):
        raise KernelTypeError(f"annotations=...: expected a dict or None, got {annotations!r}")
