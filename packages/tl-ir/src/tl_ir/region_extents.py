"""Tile-op region extents that equal a constant without being written as one.

TileLang programs slice tiles between two computed bounds, ``KV[kv_start:kv_end]``
with ``kv_start = base + k * block_N`` and ``kv_end = base + (k + 1) * block_N``
bound earlier in the body. The extent ``kv_end - kv_start`` is ``block_N``, but only
once the two bindings are substituted: the backends need tile extents that are
integers. `fold_region_extents` substitutes the body's bindings
(`tl_ir.scalar_bindings`: let-bound variables and scalars stored once) into each
non-constant extent of a ``tl.region`` operand and keeps the result where TVM's
arithmetic analyzer simplifies it to an integer; other extents stay as written.

The substitution is used only when no assigned scalar is left in the result (a
scalar stored twice could change between the two bounds' assignments, so nothing is
proved about it).
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir.scalar_bindings import ScalarBindings

__all__ = ["fold_region_extents"]


def fold_region_extents(body: Any) -> Any:
    """``body`` with every region extent that simplifies to an integer made that integer."""
    bindings = ScalarBindings(body)
    analyzer = tvm.sym.Analyzer()

    def fold(call: Any) -> Any:
        if str(getattr(call.op, "name", "")) != "tl.region" or len(call.args) < 3:
            return call
        args = list(call.args)
        changed = False
        for position in range(2, len(args)):
            extent = args[position]
            if isinstance(extent, tirx.IntImm):
                continue
            substituted = bindings.resolve(extent)
            if bindings.reads_assigned(substituted):
                continue
            simplified = analyzer.simplify(substituted)
            if isinstance(simplified, tirx.IntImm):
                args[position] = tirx.IntImm(str(extent.dtype), int(simplified.value))
                changed = True
        if not changed:
            return call
        return tirx.call_intrin("handle", "tl.region", *args)

    return tvm_ffi.structural_map(body, (tvm.ir.Call, fold), order="post")
