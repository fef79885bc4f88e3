"""TileLang's ``set_autotune_inputs``: a per-thread stack of the inputs an ``@autotune``
call checks and times every configuration on, and the ``supply_prog`` standing for them."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "AutotuneInputsCapture",
    "CapturedInputs",
    "describe_input",
    "get_autotune_inputs",
    "input_params",
    "set_autotune_inputs",
]


_captures = threading.local()


class AutotuneInputsCapture:
    """What `set_autotune_inputs` returns: a context manager under which autotuning on
    this thread checks and times every configuration on ``inputs``.

    Attributes:
        inputs: the inputs, one per kernel parameter not in ``out_idx``, in order.
    """

    __slots__ = ("inputs",)

    def __init__(self, inputs: list[Any]) -> None:
        self.inputs = inputs

    def __enter__(self) -> AutotuneInputsCapture:
        _capture_stack().append(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        stack = _capture_stack()
        if self in stack:
            # This capture's own entry (the last one unless exits came out of order).
            del stack[len(stack) - 1 - stack[::-1].index(self)]


def _capture_stack() -> list[AutotuneInputsCapture]:
    stack: list[AutotuneInputsCapture] | None = getattr(_captures, "stack", None)
    if stack is None:
        stack = _captures.stack = []
    return stack


def set_autotune_inputs(*inputs: Any) -> AutotuneInputsCapture:
    """TileLang's ``tilelang.autotuner.set_autotune_inputs``: a context manager under
    which an ``@autotune`` call on this thread checks and times every configuration on
    these inputs instead of random ones (they replace ``supply_prog``, with a warning
    when one was given).

    ``set_autotune_inputs(a, b)`` and ``set_autotune_inputs([a, b])`` are the same: the
    values of the kernel's parameters not in ``out_idx``, in order (arrays, tensors,
    scalars). Each configuration gets copies (``clone()``/``copy()``), so a kernel that
    writes a parameter in place leaves the given arrays alone. Saved tuning results
    are kept per input shapes and dtypes; a kernel that takes other inputs fails its
    configurations with the call's error (``set_autotune_inputs()`` gives no inputs: a
    kernel whose parameters are all in ``out_idx``).
    """
    if len(inputs) == 1 and isinstance(inputs[0], list | tuple):
        return AutotuneInputsCapture(list(inputs[0]))
    return AutotuneInputsCapture(list(inputs))


def get_autotune_inputs() -> list[Any] | None:
    """The inputs of the innermost `set_autotune_inputs` block on this thread, or None."""
    stack = _capture_stack()
    return stack[-1].inputs if stack else None


@dataclass(frozen=True)
class CapturedInputs:
    """The ``supply_prog`` that `set_autotune_inputs` stands for: copies of the inputs
    (it pickles to a timing worker when they do)."""

    inputs: tuple[Any, ...]

    def __call__(self, params: Sequence[Any]) -> list[Any]:
        return [_copied(value) for value in self.inputs]


def input_params(kernel: Any) -> list[Any]:
    """What ``supply_prog`` is given: the kernel's parameters not in ``out_idx`` (the
    ones a call takes), as TileLang passes them; it returns one input for each."""
    outputs = set(kernel.out_idx)
    return [param for index, param in enumerate(kernel.params) if index not in outputs]


def _copied(value: Any) -> Any:
    clone = getattr(value, "clone", None)
    if callable(clone):  # torch
        return clone()
    copy = getattr(value, "copy", None)
    if callable(copy) and hasattr(value, "shape"):  # numpy and its kind
        return copy()
    return value


def describe_input(value: Any) -> Any:
    """What the saved tuning result depends on of one captured input: an array's shape
    and dtype, a plain scalar's value."""
    shape = getattr(value, "shape", None)
    if shape is not None and hasattr(value, "dtype"):
        return ["array", [int(n) for n in shape], str(value.dtype)]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return ["object", type(value).__qualname__]
