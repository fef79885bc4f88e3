"""The pass context a backend lowers a module with TVM in (``tvm.compile``,
``tvm.tirx.build``): the current one, with TVM passes known to change what a program
computes turned off.

* ``s_tir.HoistIfThenElse`` moves an ``if`` found in one branch of an outer ``if`` out
  of the loops into both branches: ``if bx == 1: Y[..] = ..`` / ``else: if i < 2: ..``
  inside ``for i, j`` lost every row ``i >= 2`` of the ``bx == 1`` branch on the CPU
  targets (a kernel's ``if``/``elif`` in a ``T.Parallel`` nest). The C and LLVM
  compilers unswitch loop-invariant branches themselves.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import tvm

__all__ = ["UNSOUND_TVM_PASSES", "sound_lowering"]

#: TVM passes a backend's lowering runs without (module docstring).
UNSOUND_TVM_PASSES: tuple[str, ...] = ("s_tir.HoistIfThenElse",)


@contextlib.contextmanager
def sound_lowering(
    config: dict[str, Any] | None = None,
    opt_level: int | None = None,
    defaults: dict[str, Any] | None = None,
) -> Iterator[None]:
    """Enter the current pass context again with `UNSOUND_TVM_PASSES` disabled and
    ``config`` merged into its config, ``defaults`` only where the current context
    sets no value (required passes and instruments kept; the opt level kept unless
    ``opt_level`` is given)."""
    current = tvm.transform.PassContext.current()
    disabled = list(current.disabled_pass)
    disabled += [name for name in UNSOUND_TVM_PASSES if name not in disabled]
    merged = {**(defaults or {}), **dict(current.config), **(config or {})}
    with tvm.transform.PassContext(
        opt_level=current.opt_level if opt_level is None else opt_level,
        required_pass=list(current.required_pass),
        disabled_pass=disabled,
        instruments=list(current.instruments),
        config=merged,
    ):
        yield
