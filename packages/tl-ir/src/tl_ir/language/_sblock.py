"""``T.sblock(name)``: a lexical scope in a TileLang kernel body.

TileLang kernels open ``with T.sblock("name"):`` scopes (declaring ``T.reads()`` and
``T.writes()``) to limit what a hint covers: a ``T.annotate_safe_value`` made inside
one holds until the scope ends, and the copies after it see the annotations made
before it again. Here such a scope adds nothing to the IR (TVM's schedulable block,
which TVM's block would be, has no meaning in these kernels and no target lowers it);
its body is emitted in place. ``T.reads``/``T.writes`` inside it are the declarations
TileLang asks for and are checked, then ignored (every pass finds the accesses itself).
"""

from __future__ import annotations

from typing import Any

import tvm
from tvm.script import tirx as _tvm_T

from tl_ir import ops as _ops
from tl_ir.errors import KernelTypeError, ScopeError
from tl_ir.frontend import current_state as _current_state
from tl_ir.language._operands import describe_operand, scalar_wrapper

__all__ = ["reads", "sblock", "writes"]


class sblock:
    """``with T.sblock(name):``: a scope for hints (module docstring).

    Raises:
        KernelTypeError: ``name`` is not a str.
        ScopeError: used outside a ``@T.prim_func`` body.
    """

    def __init__(self, name: str = "", no_realize: bool = False, exec_scope: str = "") -> None:
        if not isinstance(name, str):
            raise KernelTypeError(f"T.sblock(name): expected a str, got {name!r}")
        self.name = name
        self._saved: list[tuple[Any, Any]] = []

    def __enter__(self) -> None:
        state = _current_state()
        if state is None:
            raise ScopeError("T.sblock is only allowed inside a @T.prim_func body")
        self._saved = state.safe_values
        state.sblock_depth += 1

    def __exit__(self, *exc: Any) -> None:
        state = _current_state()
        if state is not None:
            state.safe_values = self._saved
            state.sblock_depth -= 1


def _check_regions(where: str, regions: tuple[Any, ...]) -> None:
    for region in regions:
        items = region if isinstance(region, list | tuple) else [region]
        for item in items:
            if isinstance(item, scalar_wrapper):
                item = item.scalar
            if not (
                _ops.is_buffer(item) or isinstance(item, tvm.ir.TensorRegion | tvm.ir.TensorLoad)
            ):
                raise KernelTypeError(
                    f"{where}: expected buffers or regions (A, A[i], A[0:m, :]), got "
                    f"{describe_operand(item)}"
                )


def _declaration(name: str, original: Any) -> Any:
    def declare(*buffer_slices: Any) -> None:
        state = _current_state()
        if state is None or not state.sblock_depth:
            original(*buffer_slices)  # TVM's meaning (and error) outside a T.sblock
            return
        _check_regions(f"T.{name}", buffer_slices)

    declare.__name__ = name
    declare.__doc__ = (
        f"``T.{name}(*regions)`` in a ``T.sblock``: checked (buffers or regions) and "
        "ignored (module docstring)."
    )
    return declare


reads = _declaration("reads", _tvm_T.reads)
writes = _declaration("writes", _tvm_T.writes)
