"""TileLang's rules on what a ``T.Parallel`` loop may hold, checked when a kernel is
parsed (TileLang checks them when it lowers, with the same messages' sense).

A ``T.Parallel`` loop's iterations may run in any order and at once, so its body is
elementwise work:

* a ``T.Parallel`` directly inside another (``for i in T.Parallel(M): for j in
  T.Parallel(N):``, nothing else between) is one loop nest and allowed; any other
  parallel loop inside its body, even under a ``T.serial`` loop, is refused: a
  statement beside the inner loop runs once per outer iteration while the inner
  iterations are spread, so the result depends on an order the program does not fix
  (``B[i] = 0`` beside a loop writing ``B[i * 16 + j]`` zeroed another iteration's
  elements);
* a tile operation (``T.copy``, ``T.fill``/``T.clear``, ``T.gemm``, ``T.reduce_*``,
  ``T.cumsum``) inside it is refused: each is already spread over the block's
  threads. Element atomics (``T.atomic_add`` of one element, ``T.reducer_update``) and
  ``T.print`` are elementwise and allowed;
* a ``T.Pipelined`` loop inside it is refused.

Refusals are `tl_ir.errors.KernelValueError` (a ``ValueError``, as TileLang raises).
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir.errors import KernelValueError
from tl_ir.launch import loop_kind, num_stages

__all__ = ["check_parallel_loop_bodies"]

#: Tile operations spread over the block by themselves: not inside a T.Parallel.
_TILE_OPS = frozenset({"tl.copy", "tl.fill", "tl.gemm", "tl.reduce", "tl.cumsum", "tl.cummax"})

_HINT = (
    "a T.Parallel loop's body is elementwise work: nest parallel loops directly (for i in "
    "T.Parallel(M): for j in T.Parallel(N): ...), and put tile operations and T.Pipelined "
    "loops outside it"
)


def _is_parallel(loop: Any) -> bool:
    return loop_kind(loop) == "parallel"


def check_parallel_loop_bodies(body: Any) -> None:
    """Refuse what a ``T.Parallel`` loop of ``body`` may not hold (module docstring).

    Raises:
        KernelValueError: naming the construct and the loop it is in.
    """

    # Callbacks of a structural walk record what they find; an exception raised inside
    # one would reach the caller as tvm_ffi's RuntimeError.
    problems: list[str] = []

    def check_parallel(loop: Any) -> None:
        inner = loop.body
        while isinstance(inner, tirx.For) and _is_parallel(inner):
            loop, inner = inner, inner.body  # a perfect nest of parallel loops: one loop

        def visit_loop(node: Any) -> None:
            if _is_parallel(node):
                problems.append(
                    f"a T.Parallel loop over {node.loop_var} is nested inside the T.Parallel "
                    f"loop over {loop.loop_var} with other statements around it; {_HINT}"
                )
            elif num_stages(node) is not None:
                problems.append(
                    f"a T.Pipelined loop over {node.loop_var} is inside the T.Parallel loop "
                    f"over {loop.loop_var}; {_HINT}"
                )

        def visit_call(node: Any) -> None:
            name = str(getattr(node.op, "name", ""))
            if name in _TILE_OPS:
                problems.append(
                    f"the tile operation T.{name[3:]} is inside the T.Parallel loop over "
                    f"{loop.loop_var}; {_HINT}"
                )

        tvm_ffi.structural_walk(
            inner, [(tirx.For, visit_loop), (tvm.ir.Call, visit_call)], order="pre"
        )

    def outermost(node: Any) -> Any:
        if not _is_parallel(node):
            return None
        check_parallel(node)
        return tvm_ffi.WalkResult.SKIP  # its body, nest included, was checked whole

    # Pre-order: an outer loop is checked (and named in the message) before anything in it.
    tvm_ffi.structural_walk(body, (tirx.For, outermost), order="pre")
    if problems:
        raise KernelValueError(problems[0])
