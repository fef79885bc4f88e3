"""Which threads of a block run the code under thread-dependent branches.

Work the block's threads share (a ``T.Parallel`` nest over shared or global
tiles, a ``T.copy`` or ``T.fill`` of such tiles) is dealt to the threads that
run it. Outside any thread-dependent branch those are all the threads of the
block. Under one (``if tx < 128:`` in a 256-thread block), TileLang deals the
work to the threads the condition selects: its lowering bounds the thread
index by the branch condition (an integer-bound analysis under the condition)
and partitions the nest over that range, so threads 0-127 share the whole
iteration space. `BranchThreads` finds that set exactly, by evaluating the
condition for every thread index of the block, and gives it as a `range` when
it is one contiguous run of threads.

What cannot be dealt correctly is refused with a `GpuLoweringError` rather
than lowered to drop iterations: a condition whose value for a thread is not
known at compile time (it reads memory or a run-time value besides block-
uniform conjuncts), a selected set that is not one run of threads
(``tx % 2 == 0``), and shared work inside a loop whose bounds or condition
differ between the threads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_passes.gpu.errors import GpuLoweringError
from tl_passes.gpu.uniformity import ThreadDependence


@dataclass(frozen=True)
class _Branch:
    """One enclosing thread-dependent construct: ``condition`` taken (or, with
    ``negated``, not taken); ``condition`` None: a loop whose trip count differs
    between the threads (no thread set can be given)."""

    condition: Any | None
    negated: bool
    text: str


class BranchThreads:
    """The stack of thread-dependent branches around the code being lowered.

    Args:
        body: the kernel body (tile level), for the thread-dependence analysis.
        thread_vars: the kernel's thread index variables.
        thread_extents: their extents (``threadIdx.x`` first).
    """

    def __init__(self, body: Any, thread_vars: Sequence[Any], thread_extents: Sequence[int]):
        self._body = body
        self._thread_vars = list(thread_vars)
        self._extents = [int(e) for e in thread_extents]
        self._dependence: ThreadDependence | None = None
        self._stack: list[_Branch] = []

    @property
    def num_threads(self) -> int:
        """Threads per block."""
        count = 1
        for extent in self._extents:
            count *= extent
        return count

    def depends(self, expr: Any) -> bool:
        """Whether ``expr`` may differ between the threads of the block."""
        if self._dependence is None:
            self._dependence = ThreadDependence(self._body, self._thread_vars)
        return self._dependence.depends(expr)

    def enter_if(self, condition: Any, taken: bool) -> bool:
        """Push the branch of ``if condition`` that is ``taken`` (False: the else
        branch) when the condition is thread-dependent; returns whether it pushed
        (the caller then calls `leave`)."""
        if not self.depends(condition):
            return False
        self._stack.append(_Branch(condition, not taken, str(condition)))
        return True

    def enter_loop(self, text: str) -> None:
        """Push a loop whose bounds or condition (``text``) differ between threads."""
        self._stack.append(_Branch(None, False, text))

    def leave(self) -> None:
        """Pop the innermost branch pushed by `enter_if` or `enter_loop`."""
        self._stack.pop()

    def restricted(self) -> bool:
        """Whether some thread-dependent branch encloses the current code."""
        return bool(self._stack)

    def selected(self, what: str) -> range | None:
        """The threads that run the current code and share ``what`` (None: every
        thread of the block, as without any branch; an empty range: none).

        Raises:
            GpuLoweringError: the set is not known at compile time or is not one
                contiguous run of threads (``what`` names the work refused).
        """
        if not self._stack:
            return None
        mask = [True] * self.num_threads
        for branch in self._stack:
            if branch.condition is None:
                raise GpuLoweringError(
                    f"{what} inside the thread-dependent loop `{branch.text}`: the threads "
                    "sharing it differ per iteration; move it out of the loop"
                )
            for thread in range(self.num_threads):
                if mask[thread]:
                    mask[thread] = self._takes(branch, thread, what)
        chosen = [t for t, runs in enumerate(mask) if runs]
        if len(chosen) == self.num_threads:
            return None
        if not chosen:
            return range(0)
        if chosen[-1] - chosen[0] + 1 != len(chosen):
            raise GpuLoweringError(
                f"{what} under thread-dependent conditions "
                f"{' and '.join(f'`{b.text}`' for b in self._stack)}: the threads taking them "
                f"are not one contiguous run (threads {chosen[:4]}...); dealing the work to "
                "them is not implemented (write it per thread, or branch on a range "
                "of the thread index)"
            )
        return range(chosen[0], chosen[-1] + 1)

    def _takes(self, branch: _Branch, thread: int, what: str) -> bool:
        values: dict[Any, int] = {}
        rest = thread
        for var, extent in zip(self._thread_vars, self._extents, strict=True):
            values[var] = rest % extent
            rest //= extent
        condition = branch.condition
        if not branch.negated:
            # Block-uniform conjuncts do not choose threads: when one is false, no
            # thread runs the branch and the dealing does not matter.
            parts = [p for p in _conjuncts(condition) if self.depends(p)]
        else:
            parts = [condition]
        for part in parts:
            value = _evaluate(part, values)
            if value is None:
                raise GpuLoweringError(
                    f"{what} under the thread-dependent condition `{branch.text}`: which "
                    "threads take it is not known at compile time (it reads a run-time "
                    "or per-thread value), so the threads sharing the work cannot be "
                    "chosen; branch on the thread index alone"
                )
            if value == branch.negated:
                return False
        return True


#: Folds conditions with constant thread indices (no constraints are ever entered).
_ANALYZER = tvm.sym.Analyzer()


def _conjuncts(condition: Any) -> list[Any]:
    if isinstance(condition, tirx.And):
        return [*_conjuncts(condition.a), *_conjuncts(condition.b)]
    return [condition]


def _evaluate(condition: Any, values: dict[Any, int]) -> bool | None:
    """``condition`` with the thread variables set to ``values``, folded; None when
    it does not fold to a constant."""

    def replace(var: Any) -> Any:
        for known, value in values.items():
            if var.same_as(known):
                return tirx.IntImm(str(var.ty.dtype), value)
        return var

    folded = _ANALYZER.simplify(
        tvm_ffi.structural_map(condition, (tvm.ir.Var, replace), order="post")
    )
    if isinstance(folded, tirx.IntImm):
        return bool(folded.value)
    return None
