"""The state of one eager kernel build: the bound ``T.const`` values, the outputs
``T.empty`` created and what the body returned.

One build runs on one thread at a time; builds nest nowhere (a build is a parse),
so a per-thread stack is enough.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EagerBuildState", "active_build", "current_build"]


@dataclass
class EagerBuildState:
    """What one eager build binds and collects.

    Attributes:
        function: the eager function's qualified name (for messages).
        consts: the value of every ``T.const`` symbol, by symbol name (an int; a
            placeholder Var while the bindings are being found).
        outputs: ``(name, buffer)`` of every ``T.empty`` in creation order.
        returned: the buffers the body returned, in ``return`` order (None: no return).
    """

    function: str
    consts: Mapping[str, Any]
    outputs: list[tuple[str, Any]] = field(default_factory=list)
    returned: list[Any] | None = None


class _Local(threading.local):
    def __init__(self) -> None:
        self.builds: list[EagerBuildState] = []


_LOCAL = _Local()


def current_build() -> EagerBuildState | None:
    """The eager build running on this thread, or None."""
    return _LOCAL.builds[-1] if _LOCAL.builds else None


@contextmanager
def active_build(state: EagerBuildState) -> Iterator[EagerBuildState]:
    """Make ``state`` the current build for the duration of the block."""
    _LOCAL.builds.append(state)
    try:
        yield state
    finally:
        _LOCAL.builds.pop()


def describe(value: Any) -> str:
    """A short description of ``value`` for messages."""
    return f"{type(value).__name__} {value!r}"[:120]
