"""Warp-wide matrix instructions and matrix loads, as a `GpuTraits` declares them.

A backend whose GPU multiplies small matrices per warp (tensor cores) describes
each instruction it can emit as a `MatrixInstruction`: the operand and
accumulator dtypes, the shape ``m x n x k`` one warp computes, the device
function the lowering calls (``function(c, a, b)``: pointers to the calling
lane's accumulator, A and B registers; ``c = a * b + c``), when the target has
it, and where each operand's elements live across the warp: a *fragment map*
``(lane, element) -> (row, col)`` per operand (A is ``m x k``, B ``k x n``, the
accumulator ``m x n``), ``element`` counting the lane's registers in the order
the function takes them. The maps are written for Python ints and work on TIR
expressions too (they use only ``+``, ``*``, ``//`` and ``%``).

`MatrixLoad` describes a warp-collective load of small row matrices from
shared memory into registers (``ldmatrix``-style): ``count`` matrices of
`MatrixLoad.rows` rows of `MatrixLoad.row_bytes` bytes; lane ``l`` supplies
the address of row ``l % rows`` of matrix ``l // rows``; 32-bit register ``j``
of lane ``i`` receives bytes ``4 * (i % 4)`` to ``4 * (i % 4) + 3`` of row
``i // 4`` of matrix ``j``. The transposed form moves 16-bit elements: register
``j`` of lane ``i`` receives elements ``(2 * (i % 4) + h, i // 4)`` (stored
row, stored column) of matrix ``j`` for ``h`` in 0, 1. The lowering checks,
from the fragment maps, which operand registers such loads can fill and loads
the others element by element.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import attrs

#: ``(lane, element) -> (row, col)`` of one operand fragment.
FragmentMap = Callable[[Any, Any], tuple[Any, Any]]


def _always(target: Any) -> bool:
    return True


def _positive(instance: Any, attribute: attrs.Attribute[Any], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"{type(instance).__name__}.{attribute.name}: expected an int >= 1, got {value!r}"
        )


@attrs.frozen
class MatrixInstruction:
    """One warp-wide ``C[m x n] += A[m x k] @ B[k x n]`` instruction (module docstring).

    Attributes:
        function: the device function called as ``function(&c, &a, &b)``.
        a_dtype, b_dtype, acc_dtype: operand and accumulator dtypes (TVM names).
        m, n, k: the shape one warp computes per call.
        a_map, b_map, c_map: each operand's fragment map.
        a_elements, b_elements, c_elements: elements each lane holds per operand.
        available: predicate on the TVM target (the minimum arch, for instance);
            None targets (no target known) count as available.
        lanes: lanes of the warp that executes it.
    """

    function: str
    a_dtype: str
    b_dtype: str
    acc_dtype: str
    m: int = attrs.field(validator=_positive)
    n: int = attrs.field(validator=_positive)
    k: int = attrs.field(validator=_positive)
    a_map: FragmentMap = attrs.field(eq=False, repr=False)
    b_map: FragmentMap = attrs.field(eq=False, repr=False)
    c_map: FragmentMap = attrs.field(eq=False, repr=False)
    a_elements: int = attrs.field(validator=_positive)
    b_elements: int = attrs.field(validator=_positive)
    c_elements: int = attrs.field(validator=_positive)
    available: Callable[[Any], bool] = attrs.field(default=_always, eq=False, repr=False)
    lanes: int = attrs.field(default=32, validator=_positive)

    def __attrs_post_init__(self) -> None:
        for operand, (rows, cols), count, fragment in (
            ("A", (self.m, self.k), self.a_elements, self.a_map),
            ("B", (self.k, self.n), self.b_elements, self.b_map),
            ("accumulator", (self.m, self.n), self.c_elements, self.c_map),
        ):
            if rows * cols != count * self.lanes:
                raise ValueError(
                    f"MatrixInstruction {self.function}: {operand} holds {rows}x{cols} "
                    f"elements, expected {self.lanes} lanes x {count} elements to cover them"
                )
            seen = {fragment(lane, e) for lane in range(self.lanes) for e in range(count)}
            expected = {(r, c) for r in range(rows) for c in range(cols)}
            if seen != expected:
                raise ValueError(
                    f"MatrixInstruction {self.function}: the {operand} fragment map does not "
                    f"cover its {rows}x{cols} tile exactly once"
                )

    def available_on(self, target: Any | None) -> bool:
        """Whether the TVM ``target`` has this instruction (True when ``target`` is None)."""
        return target is None or bool(self.available(target))


def _frozen_names(value: Mapping[int, str]) -> Mapping[int, str]:
    return MappingProxyType(dict(value))


@attrs.frozen
class MatrixLoad:
    """A warp-collective shared-memory matrix load (module docstring).

    Attributes:
        functions: matrices per call (1, 2, 4) -> device function
            ``function(&regs, row_address)``.
        transposed_functions: the same for the transposing form (16-bit elements).
        rows: rows per matrix.
        row_bytes: bytes per row (each row address aligned to it).
        transposed_element_bits: element width the transposing form moves.
    """

    functions: Mapping[int, str] = attrs.field(converter=_frozen_names, hash=False)
    transposed_functions: Mapping[int, str] = attrs.field(converter=_frozen_names, hash=False)
    rows: int = attrs.field(default=8, validator=_positive)
    row_bytes: int = attrs.field(default=16, validator=_positive)
    transposed_element_bits: int = attrs.field(default=16, validator=_positive)
