"""Tiles indexed by values read from memory keep their whole size through TVM's build.

TVM's build (``tvm.compile`` for ``c`` and ``llvm``, and the ``s_tir`` pipeline the GPU
targets build with) runs
``s_tir.CompactBufferAllocation``, which shrinks each allocated buffer to the
region its accesses touch and rebases every access by the region's start. An
index that reads memory (``tmp[j]`` with ``j`` a ``T.alloc_var``, ``tmp[I[0]]``)
is taken for a single point, so a tile accessed only at such indices shrinks to
one element and the start, the index expression itself, is re-read at every
access:

* when the index reads another allocated buffer (a local variable), the start
  still names that buffer's pre-compaction object, and the build fails with
  "Buffer j is used before its definition" (TileLang issue 1678:
  ``amax = T.max(amax, tmp_row[j])``);
* otherwise every access lands on the one element: ``for q: I[0] = q;
  tmp[I[0]] = q`` then summing ``tmp[I[0]]`` the same way read the last value
  four times (16 instead of 10), silently.

`keep_data_indexed_tiles_whole` marks each such allocation as opaquely accessed
(an ``Evaluate`` of its data pointer right after it), which makes the pass keep
the buffer's whole shape; the marker computes nothing (the C source shows it as a
bare ``tmp_ptr;`` statement). Other allocations are left to the compaction, unless
`keep_every_tile_whole` marks them all (the C build's retry when the compaction left
a tile a run-time size). It
runs on the lowered module just before TVM's build (the CPU backend's
`generate_c_source`, `build_llvm` and llvm `emit_source`; the GPU backends'
`build_device_module`), after every lowering stage, so no stage can drop the
marker.
"""

from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_ir.scopes import buffer_scope
from tl_passes.pass_base import replace_functions

#: ``TCallEffectKind`` of a pure call (``kPure``); a larger kind reads or writes state.
_PURE = 1


class _MemoryReads:
    """Whether expressions read memory: a load, a call that reads or updates state (or
    one TVM gives no effect kind), or a variable bound (``Bind``/``LetStmt``/``Let``)
    anywhere in the function to such a value. Variables are keyed by object handle."""

    def __init__(self, body: tirx.Stmt) -> None:
        self.bound: dict[int, Any] = {}
        self.known: dict[int, bool] = {}

        def binding(node: Any) -> None:
            self.bound[node.var.__chandle__()] = node.value

        tvm_ffi.structural_walk(
            body, [(tirx.Bind, binding), (tirx.LetStmt, binding), (tirx.Let, binding)]
        )

    def __call__(self, expr: Any) -> bool:
        found = False

        def load(node: Any) -> None:
            nonlocal found
            found = True

        def call(node: Any) -> None:
            nonlocal found
            op = node.op
            try:
                effect = int(op.get_attr("TCallEffectKind"))
            except Exception:  # not an Op, or no effect kind: taken as impure
                effect = _PURE + 1
            if effect > _PURE:
                found = True

        def var(node: Any) -> None:
            nonlocal found
            handle = node.__chandle__()
            if handle not in self.bound:
                return
            if handle not in self.known:
                self.known[handle] = False  # a guard while the value is examined
                self.known[handle] = self(self.bound[handle])
            found = found or self.known[handle]

        tvm_ffi.structural_walk(
            expr, [(tvm.ir.TensorLoad, load), (tvm.ir.Call, call), (tvm.ir.Var, var)], order="pre"
        )
        return found


def data_indexed_tiles(body: tirx.Stmt) -> list[Any]:
    """The buffers allocated in ``body`` that some load or store indexes with a value
    read from memory (see the module)."""
    reads_memory = _MemoryReads(body)
    allocated: set[int] = set()
    tvm_ffi.structural_walk(
        body, (tirx.AllocBuffer, lambda node: allocated.add(node.buffer.__chandle__()))
    )
    found: dict[int, Any] = {}

    def check(buffer: Any, indices: Any) -> None:
        handle = buffer.__chandle__()
        if handle not in allocated or handle in found:
            return
        if any(reads_memory(index) for index in indices):
            found[handle] = buffer

    tvm_ffi.structural_walk(
        body,
        [
            (tvm.ir.TensorLoad, lambda node: check(node.source, node.indices)),
            (tirx.BufferStore, lambda node: check(node.buffer, node.indices)),
        ],
        order="pre",
    )
    return list(found.values())


def keep_tiles_whole(body: tirx.Stmt, tiles: list[Any]) -> tirx.Stmt:
    """``body`` with an ``Evaluate`` of the data pointer after the allocation of each of
    ``tiles`` (an opaque access: TVM's compaction keeps the whole buffer)."""
    if not tiles:
        return body

    handles = {tile.__chandle__() for tile in tiles}

    def sequence(seq: Any) -> Any:
        stmts: list[Any] = []
        for stmt in seq.seq:
            stmts.append(stmt)
            if isinstance(stmt, tirx.AllocBuffer) and stmt.buffer.__chandle__() in handles:
                stmts.append(tirx.Evaluate(stmt.buffer.data))
        return tirx.SeqStmt(stmts) if len(stmts) != len(seq.seq) else seq

    result: tirx.Stmt = tvm_ffi.structural_map(body, (tirx.SeqStmt, sequence), order="post")
    return result


def keep_data_indexed_tiles_whole(
    mod: tvm.IRModule, scopes: tuple[str, ...] | None = None
) -> tvm.IRModule:
    """``mod`` with every `data_indexed_tiles` allocation of its PrimFuncs marked to keep
    its whole shape through TVM's build (module doc); other functions and allocations
    unchanged.

    Args:
        mod: the lowered module.
        scopes: mark only buffers of these storage scopes (None: every scope). The
            GPU build marks per-thread ``local`` buffers only: its shared-memory
            planning replaces shared allocations, and a marker naming one would be
            left undefined.
    """
    changed: dict[Any, Any] = {}
    for gvar, func in mod.functions.items():
        if not isinstance(func, tirx.PrimFunc):
            continue
        tiles = data_indexed_tiles(func.body)
        if scopes is not None:
            tiles = [tile for tile in tiles if buffer_scope(tile) in scopes]
        if tiles:
            changed[gvar] = func.with_body(keep_tiles_whole(func.body, tiles))
    return replace_functions(mod, changed) if changed else mod


def keep_every_tile_whole(mod: tvm.IRModule) -> tvm.IRModule:
    """``mod`` with every allocation of its PrimFuncs marked to keep its whole shape
    (the C build's retry when TVM's compaction shrank a tile to a run-time size, which
    its C code generator cannot allocate)."""
    changed: dict[Any, Any] = {}
    for gvar, func in mod.functions.items():
        if isinstance(func, tirx.PrimFunc):
            tiles: list[Any] = []
            tvm_ffi.structural_walk(
                func.body, (tirx.AllocBuffer, lambda node, found=tiles: found.append(node.buffer))
            )
            changed[gvar] = func.with_body(keep_tiles_whole(func.body, tiles))
    return replace_functions(mod, changed) if changed else mod


__all__ = [
    "data_indexed_tiles",
    "keep_data_indexed_tiles_whole",
    "keep_every_tile_whole",
    "keep_tiles_whole",
]
