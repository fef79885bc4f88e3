"""Per-thread reductions of a thread nest as SIMD lanes (used by `cpu-lower-launch`).

A thread-indexed region runs each thread's code in turn (`thread_regions`). A
thread that sums along memory, as a GEMV's threads do::

    for bk in T.serial(K // BLOCK_K):          # a loop of the thread's own code
        ...                                    # (staging into the thread's locals)
        for k in T.serial(TILE_K):             # contiguous along k
            acc[t] = acc[t] + A_local[k] * B_local[k]

is one chain of dependent scalar adds: one add latency per element, no vector
lanes. This module turns such a chain into **lanes along its contiguous loop**:
a vector of ``V`` partial sums (``V`` = the register's lanes for the dtype, the
largest power of two dividing the loop's extent), updated by a vectorized loop,
folded once into the accumulator by a tree of half-width vector adds (the
horizontal reduction)::

    partial[0:V] = 0
    for bk in T.serial(K // BLOCK_K):          # hoisted: one vector per row of K
        ...
        for ko, l in T.grid(TILE_K // V, T.vectorized(V)):
            partial[l] = partial[l] + A_local[ko * V + l] * B_local[ko * V + l]
    for w in (V / 2, ..., 1): partial[0:w] += partial[w:2w]
    acc[t] = acc[t] + partial[0]

When the enclosing loop of the reduction touches the accumulator nowhere else
(and the accumulator's index does not depend on it), the partial vector lives
across that loop, so the accumulator is read and written once per thread instead
of once per iteration.

The sum is reassociated: each thread adds the same products, in ``V``
interleaved partial sums. That is the reordering a parallel reduction already
allows (TileLang's own split-K GEMVs sum each thread's slice apart and then
across threads); results agree with the scalar order within rounding of the
sum. Floating-point accumulators only (an integer sum is exact either way and
is vectorized by the compilers already).

What is proven before rewriting (otherwise the loop stays scalar, the fallback,
and the nest says why in its `THREAD_PATH_KEY` annotation, which TL_DUMP_IR
shows after ``cpu-lower-launch``):

* the loop is serial, starts at 0, has a constant extent with a power-of-two
  divisor of at least 2, and its body is the one store ``acc[I] = acc[I] + e``
  (or ``e + acc[I]``);
* ``acc`` is a thread-local (``local``) float32/float64 array, ``I`` does not
  depend on the loop, ``e`` does not read ``acc`` and calls nothing but casts
  and pure arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.thread_ir import is_local, reads_buffer, touches_buffer, uses_any
from tl_codegen_cpu.lowering.vector_isa import VectorISA
from tl_ir.builtin_ops import builtin_op_names
from tl_ir.launch import rebuild_loop
from tl_ir.ops import const_int
from tl_ir.scopes import LOCAL
from tl_passes.buffer_rewrite import substitute_vars

#: Annotation on the outermost loop of each thread nest after ``cpu-lower-launch``:
#: which lowering its per-thread reductions took ("lanes: ..." or "scalar: ...").
THREAD_PATH_KEY = "tl.cpu_thread_path"

_FLOAT_ACCUMULATORS = ("float32", "float64")

#: Calls a reduced expression may contain (pure, lane-wise).
_PURE_CALLS = builtin_op_names("if_then_else", "fabs", "exp", "sqrt")


@dataclass
class LaneReport:
    """What happened to the reductions of one thread nest."""

    vectorized: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """The `THREAD_PATH_KEY` text: the lane path taken, or why not."""
        if self.vectorized:
            return "lanes: " + "; ".join(self.vectorized)
        if self.refused:
            return "scalar: " + "; ".join(self.refused)
        return "scalar: no per-thread reduction along a loop"


@dataclass(frozen=True)
class _Reduction:
    loop: Any  # the For
    buffer: Any
    indices: tuple[Any, ...]
    term: Any  # e
    lanes: int


def _is_accumulator_load(expr: Any, buffer: Any, indices: Any) -> bool:
    return (
        isinstance(expr, tvm.ir.TensorLoad)
        and expr.source.same_as(buffer)
        and len(expr.indices) == len(indices)
        and all(tvm_ffi.structural_equal(a, b) for a, b in zip(expr.indices, indices, strict=True))
    )


def _impure_call(expr: Any) -> str | None:
    bad: list[str] = []

    def visit(call: Any) -> None:
        name = str(call.op.name) if hasattr(call.op, "name") else str(call.op)
        if name not in _PURE_CALLS:
            bad.append(name)

    tvm_ffi.structural_walk(expr, (tvm.ir.Call, visit), order="post")
    return bad[0] if bad else None


def _largest_lanes(extent: int, register_lanes: int) -> int:
    lanes = 1
    while lanes * 2 <= register_lanes and extent % (lanes * 2) == 0:
        lanes *= 2
    return lanes


def _buffer_name(buffer: Any) -> str:
    return str(buffer.name)


def match_reduction(loop: Any, isa: VectorISA) -> _Reduction | str:
    """The reduction a serial loop performs, or why it is not one this module lanes."""
    if not isinstance(loop, tirx.For) or loop.kind != tirx.ForKind.SERIAL:
        return "not a serial loop"
    if const_int(loop.min) != 0:
        return "loop does not start at 0"
    extent = const_int(loop.extent)
    if extent is None:
        return "loop extent is not a constant"
    store = loop.body
    if not isinstance(store, tirx.BufferStore):
        return "loop body is not one store"
    buffer, indices = store.buffer, tuple(store.indices)
    if not is_local(buffer):
        return f"{_buffer_name(buffer)} is not thread-local"
    dtype = str(buffer.ty.dtype)
    if dtype not in _FLOAT_ACCUMULATORS:
        return f"{_buffer_name(buffer)} is {dtype}, not float32/float64"
    if any(uses_any(i, {loop.loop_var}) for i in indices):
        return f"{_buffer_name(buffer)}'s index depends on the loop"
    value = store.value
    if not isinstance(value, tirx.Add):
        return "store is not an accumulation (acc = acc + e)"
    if _is_accumulator_load(value.a, buffer, indices):
        term = value.b
    elif _is_accumulator_load(value.b, buffer, indices):
        term = value.a
    else:
        return "store is not an accumulation (acc = acc + e)"
    if reads_buffer(term, buffer):
        return f"the added term reads {_buffer_name(buffer)}"
    impure = _impure_call(term)
    if impure is not None:
        return f"the added term calls {impure}"
    lanes = _largest_lanes(extent, isa.lanes(dtype))
    if lanes < 2:
        return f"extent {extent} has no power-of-two divisor of at least 2"
    return _Reduction(loop, buffer, indices, term, lanes)


def _vector_loop(var_name: str, lanes: int, body_of: Any) -> Any:
    lane = tirx.Var(var_name, "int32")
    return tirx.For(lane, 0, lanes, tirx.ForKind.VECTORIZED, body_of(lane))


class _Laner:
    def __init__(self, isa: VectorISA, threads: tuple[Any, ...], fold: str = "vector") -> None:
        self.isa = isa
        self.threads = threads
        self.fold = fold
        self.report = LaneReport()
        self._counter = 0

    def _partial_buffer(self, reduction: _Reduction) -> Any:
        self._counter += 1
        name = f"{_buffer_name(reduction.buffer)}_lanes{self._counter}"
        return tirx.decl_buffer(
            (reduction.lanes,), str(reduction.buffer.ty.dtype), name=name, scope=LOCAL
        )

    def _update(self, reduction: _Reduction, partial: Any) -> Any:
        """``for ko, l: partial[l] += e(ko * V + l)`` replacing the reduction loop."""
        loop, lanes = reduction.loop, reduction.lanes
        extent = int(loop.extent.value)
        outer = tirx.Var(f"{loop.loop_var.name}_outer", "int32")

        def body(lane: Any) -> Any:
            k = lane if extent == lanes else outer * lanes + lane
            term = substitute_vars(tirx.Evaluate(reduction.term), {loop.loop_var: k}).value
            current = tirx.BufferLoad(partial, [lane])
            return tirx.BufferStore(partial, current + term, [lane])

        inner = _vector_loop(f"{loop.loop_var.name}_lane", lanes, body)
        if extent == lanes:
            return inner
        return tirx.For(outer, 0, extent // lanes, tirx.ForKind.SERIAL, inner)

    def _fold(self, reduction: _Reduction, partial: Any) -> list[Any]:
        """Tree of half-width vector adds, then one add into the accumulator (with
        ``fold="expression"``: the same tree as one expression, one store)."""
        accumulator = tirx.BufferLoad(reduction.buffer, list(reduction.indices))
        if self.fold == "expression":
            values = [
                tirx.BufferLoad(partial, [tirx.const(i, "int32")]) for i in range(reduction.lanes)
            ]
            while len(values) > 1:
                half = len(values) // 2
                values = [values[i] + values[i + half] for i in range(half)]
            return [
                tirx.BufferStore(reduction.buffer, accumulator + values[0], list(reduction.indices))
            ]
        steps: list[Any] = []
        width = reduction.lanes // 2
        while width >= 1:
            half = width

            def body(lane: Any, half: int = half) -> Any:
                value = tirx.BufferLoad(partial, [lane]) + tirx.BufferLoad(partial, [lane + half])
                return tirx.BufferStore(partial, value, [lane])

            if half == 1:
                steps.append(body(tirx.const(0, "int32")))
            else:
                steps.append(_vector_loop(f"fold{half}", half, body))
            width //= 2
        accumulator = tirx.BufferLoad(reduction.buffer, list(reduction.indices))
        steps.append(
            tirx.BufferStore(
                reduction.buffer,
                accumulator + tirx.BufferLoad(partial, [tirx.const(0, "int32")]),
                list(reduction.indices),
            )
        )
        return steps

    def _init(self, reduction: _Reduction, partial: Any) -> list[Any]:
        zero = tirx.const(0, str(reduction.buffer.ty.dtype))
        return [
            tirx.AllocBuffer(partial),
            _vector_loop(
                "init_lane", reduction.lanes, lambda lane: tirx.BufferStore(partial, zero, [lane])
            ),
        ]

    def _describe(self, reduction: _Reduction, hoisted: Any) -> str:
        where = f" across {hoisted.loop_var.name}" if hoisted is not None else ""
        return (
            f"sum into {_buffer_name(reduction.buffer)} along {reduction.loop.loop_var.name} "
            f"as {reduction.lanes} lanes{where}"
        )

    def rewrite(self, stmt: Any) -> Any:
        """``stmt`` with every reduction loop inside it laned (outer loops first, so
        that a partial vector can live across the loop around its reduction)."""
        if isinstance(stmt, tirx.SeqStmt):
            return tirx.SeqStmt([self.rewrite(s) for s in stmt.seq])
        if isinstance(stmt, tirx.IfThenElse):
            other = None if stmt.else_case is None else self.rewrite(stmt.else_case)
            return tirx.IfThenElse(stmt.condition, self.rewrite(stmt.then_case), other)
        if isinstance(stmt, tirx.LetStmt):
            return tirx.LetStmt(stmt.var, stmt.value, self.rewrite(stmt.body))
        if isinstance(stmt, tirx.AttrStmt):
            return tirx.AttrStmt(stmt.node, stmt.attr_key, stmt.value, self.rewrite(stmt.body))
        if not isinstance(stmt, tirx.For):
            return stmt
        hoisted = self._try_hoist(stmt)
        if hoisted is not None:
            return hoisted
        found = match_reduction(stmt, self.isa)
        if isinstance(found, _Reduction):
            partial = self._partial_buffer(found)
            self.report.vectorized.append(self._describe(found, None))
            return _seq(
                [
                    *self._init(found, partial),
                    self._update(found, partial),
                    *self._fold(found, partial),
                ]
            )
        body = stmt.body
        if isinstance(body, tirx.BufferStore) and reads_buffer(body.value, body.buffer):
            # Looks like an accumulation: say why it stays scalar.
            self.report.refused.append(f"{stmt.loop_var.name}: {found}")
        return rebuild_loop(stmt, body=self.rewrite(stmt.body))

    def _try_hoist(self, outer: Any) -> Any | None:
        if outer.kind != tirx.ForKind.SERIAL or any(
            outer.loop_var.same_as(t) for t in self.threads
        ):
            return None  # a thread loop: each thread keeps its own sum
        items = list(outer.body.seq) if isinstance(outer.body, tirx.SeqStmt) else [outer.body]
        candidates = [(i, match_reduction(s, self.isa)) for i, s in enumerate(items)]
        found = [(i, r) for i, r in candidates if isinstance(r, _Reduction)]
        if len(found) != 1:
            return None
        position, reduction = found[0]
        if any(uses_any(i, {outer.loop_var}) for i in reduction.indices):
            return None
        if any(touches_buffer(s, reduction.buffer) for i, s in enumerate(items) if i != position):
            return None
        partial = self._partial_buffer(reduction)
        items[position] = self._update(reduction, partial)
        # The rest of the body may hold further reductions of other accumulators.
        rest = [self.rewrite(s) if i != position else s for i, s in enumerate(items)]
        rebuilt = rebuild_loop(outer, body=_seq(rest))
        self.report.vectorized.append(self._describe(reduction, outer))
        return _seq([*self._init(reduction, partial), rebuilt, *self._fold(reduction, partial)])


def laned_sum(
    loop: Any, buffer: Any, indices: tuple[Any, ...], term: Any, isa: VectorISA
) -> list[Any] | str:
    """``for k in loop: buffer[indices] += term(k)`` (``loop`` a serial For from 0 with a
    constant extent; its body is not read) as statements summing in vector lanes (init,
    vectorized update, tree fold into ``buffer[indices]``), or why not (no power-of-two
    divisor of at least 2 within the register's lanes)."""
    extent = const_int(loop.extent)
    if extent is None or const_int(loop.min) != 0:
        return "the reduction's extent is not a constant from 0"
    lanes = _largest_lanes(extent, isa.lanes(str(buffer.ty.dtype)))
    if lanes < 2:
        return f"extent {extent} has no power-of-two divisor of at least 2"
    reduction = _Reduction(loop, buffer, indices, term, lanes)
    laner = _Laner(isa, ())
    partial = laner._partial_buffer(reduction)
    return [
        *laner._init(reduction, partial),
        laner._update(reduction, partial),
        *laner._fold(reduction, partial),
    ]


def lane_thread_reductions(
    nest: Any, isa: VectorISA, threads: tuple[Any, ...], fold: str = "vector"
) -> tuple[Any, LaneReport]:
    """``nest`` (one region's loop nest over the thread Vars ``threads``) with its
    per-thread float reductions along a loop computed as vector lanes (module
    docstring), and what was done or refused."""
    laner = _Laner(isa, threads, fold)
    return laner.rewrite(nest), laner.report


def _seq(stmts: list[Any]) -> Any:
    return stmts[0] if len(stmts) == 1 else tirx.SeqStmt(stmts)
