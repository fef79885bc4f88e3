"""Compile-time bounds of run-time values in a kernel body.

A tile loop (``T.Parallel``) and a tile op's extent must be known when the kernel is
compiled. A value known only at run time (``span = T.min(valid_len, 512)``,
``kv_end - kv_start`` with ``kv_end = T.min(kv_start + block_N, seqlen)``) can still be
handled when it has a compile-time upper bound: the loop covers the bound and runs its
body below the value. `UpperBounds` finds such bounds through TVM's arithmetic
analyzer, knowing the kernel's let bindings and the scalars it assigns exactly once
(`tl_ir.scalar_bindings`), and moving a term added to a ``T.min``/``T.max`` into its
arms first (``T.min(bx * 16 + 16, n) - bx * 16`` is ``T.min(16, n - bx * 16)``, at most
16), which TVM's simplifier does not do when the term is a product.

A name is replaced by its value only when that value reads no scalar the kernel stores
more than once: ``end = start + 32`` followed by ``start = start - 8`` makes
``end - start`` 40 where it is read, but substituting ``end`` would mix the old
``start`` with the new one and prove 32, a loop too short; likewise a value read from
memory the kernel writes (``start = Offsets[0]`` before ``Offsets[0] = start + 8``).
Such a name stays opaque, so
the bound comes only from what the expression reads directly (``T.min(end - start,
64)`` is still at most 64).
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir.scalar_bindings import ScalarBindings

__all__ = ["UNBOUNDED", "UpperBounds"]

#: A bound at or above this (or a lower bound at or below its negation) is no bound:
#: it comes from a value's dtype range (an int32 read from memory, plus or minus a
#: constant), not from the program, and no tile loop runs that far.
UNBOUNDED = 2**30


def _into_arms(node: Any) -> Any:
    """``min(a, b) ± c`` as ``min(a ± c, b ± c)``, ``c - min(a, b)`` as
    ``max(c - a, c - b)`` (and the same for ``max``); other nodes unchanged."""
    flip = {tirx.Min: tirx.max, tirx.Max: tirx.min}
    same = {tirx.Min: tirx.min, tirx.Max: tirx.max}
    a, b = node.a, node.b
    if isinstance(node, tirx.Add):
        if type(a) in same:
            return same[type(a)](a.a + b, a.b + b)
        if type(b) in same:
            return same[type(b)](b.a + a, b.b + a)
    if isinstance(node, tirx.Sub):
        if type(a) in same:
            return same[type(a)](a.a - b, a.b - b)
        if type(b) in flip:
            return flip[type(b)](a - b.a, a - b.b)
    return node


class UpperBounds:
    """Bounds of expressions read in ``body`` (a kernel body after parsing)."""

    def __init__(self, body: Any) -> None:
        """Record the let bindings and the scalar stores of ``body``."""
        self._analyzer = tvm.sym.Analyzer()
        self._bindings = ScalarBindings(body)
        for var, value in self._bindings.lets.items():
            if not self._bindings.reads_assigned(self._bindings.resolve(value)):
                self._analyzer.bind(var, value)

    def _stable(self, expr: Any) -> Any:
        """``expr`` with each let-bound name and each read of a scalar stored once
        replaced by its resolved value, unless that value still reads a scalar stored
        more than once (then its value where ``expr`` is read is not known: kept)."""

        def substitute(node: Any) -> Any:
            resolved = self._bindings.resolve(node)
            return node if self._bindings.reads_assigned(resolved) else resolved

        loaded = tvm_ffi.structural_map(expr, (tvm.ir.TensorLoad, substitute), order="post")
        return tvm_ffi.structural_map(loaded, (tvm.ir.Var, substitute), order="post")

    def _forms(self, expr: Any) -> list[Any]:
        resolved = self._stable(expr)
        simplify = self._analyzer.simplify
        spread = tvm_ffi.structural_map(resolved, ((tirx.Add, tirx.Sub), _into_arms), order="post")
        return [resolved, simplify(resolved), simplify(spread)]

    def of(self, expr: Any) -> int | None:
        """The smallest upper bound of ``expr`` the analyzer proves, or None when
        there is none below `UNBOUNDED`."""
        bound = min(int(self._analyzer.const_int_bound(f).max_value) for f in self._forms(expr))
        return None if bound >= UNBOUNDED else bound

    def lowest(self, expr: Any) -> int | None:
        """The largest lower bound of ``expr`` the analyzer proves, or None when there
        is none above ``-UNBOUNDED``."""
        bound = max(int(self._analyzer.const_int_bound(f).min_value) for f in self._forms(expr))
        return None if bound <= -UNBOUNDED else bound
