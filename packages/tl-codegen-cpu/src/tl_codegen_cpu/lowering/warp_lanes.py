"""Warp reductions and uniform shuffles as vector code (used by `cpu-lower-warp-shuffles`).

The general lowering of a shuffle (`lower_warp_shuffles`) is an exchange through
a block-shared transfer array: every thread stores its value, a barrier, every
thread reads its source lane (a scalar load at a computed index under a select),
a barrier. A warp reduction (``T.warp_reduce_sum``: five nested ``shfl_xor``)
is five such exchanges, ten barriers, each a loop over the block's threads.

Two common forms have a cheaper exact equivalent, built here as a block-level
``T.Parallel`` nest between the threads' store and their read (`thread_regions`
runs such a nest once per block, between the thread loops):

* **Reductions by an xor butterfly**: ``op(x, shfl_xor(x, c))`` nested over the
  offsets ``{s/2, ..., 2, 1}`` in any order (``op`` one of ``+``, ``max``, ``min``,
  the same at every level; ``T.warp_reduce_*`` build exactly this) leaves every
  lane of each aligned ``s``-lane group with the group's reduction. Here: each
  group's values, contiguous in the transfer array, are folded in place by a tree
  of half-width vector operations (``t[j] = op(t[j], t[j + h])`` for ``j < h``,
  ``h = s/2, ..., 1``), and the result is broadcast over the group, so each thread
  reads its own element. With the offsets in descending order (as
  ``T.warp_reduce_*`` apply them) the tree adds what the butterfly adds, in the
  same order, so even a float sum is bit-identical to the GPU's; another order
  reassociates a float sum (the reordering a parallel reduction allows).
* **Shuffles by a uniform constant**: ``shfl_xor(v, c)`` (``c`` a power of two
  below the width), ``shfl_down(v, d)`` / ``shfl_up(v, d)`` with a constant
  ``0 < d < width`` and ``shfl_sync(v, lane)`` with a constant lane become
  contiguous copies within each group (two swapped halves, a shifted copy and
  the kept tail or head, a broadcast): vector loads and stores.

Anything else (an offset that varies, a thread-dependent source lane) keeps the
general exchange. Which path each shuffle took is the ``tl.cpu_thread_path`` of
its nest (``"lanes: ..."`` on the block-level nest, ``"scalar: ..."`` on the
threads' read), visible in ``TL_DUMP_IR``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tl_codegen_cpu.lowering.thread_lanes import THREAD_PATH_KEY
from tl_ir.launch import LOOP_KIND_KEY, rebuild_loop
from tl_ir.ops import const_int
from tl_passes.buffer_rewrite import substitute_vars

#: The IR's shuffle intrinsics -> the mode of PTX ``shfl.sync`` they are.
SHUFFLE_MODES: dict[str, str] = {
    "tirx.tvm_warp_shuffle": "idx",
    "tirx.tvm_warp_shuffle_down": "down",
    "tirx.tvm_warp_shuffle_up": "up",
}

#: The lane mask of a whole warp, the only one the CPU lowering accepts.
FULL_MASK = (1 << 32) - 1

#: Annotation on a block-level exchange nest: the lanes per group, so that a thread
#: condition around the shuffle can be applied per group (`guard_groups`).
GROUP_KEY = "tl.cpu_warp_group"

_COMBINERS: dict[type, str] = {tirx.Add: "sum", tirx.Max: "max", tirx.Min: "min"}


def shuffle_mode(node: Any) -> str | None:
    """The PTX mode of a shuffle intrinsic call (``"idx"``, ``"down"``, ``"up"``), or None."""
    if isinstance(node, tvm.ir.Call) and isinstance(node.op, tvm.ir.Op):
        return SHUFFLE_MODES.get(str(node.op.name))
    return None


def _combine(kind: str, a: Any, b: Any) -> Any:
    if kind == "sum":
        return a + b
    return tirx.max(a, b) if kind == "max" else tirx.min(a, b)


def _is_lane(expr: Any, thread: Any, width: int) -> bool:
    """Whether ``expr`` is the thread's lane in groups of ``width`` up to bits the
    shuffle masks off anyway: ``tx`` or ``tx % m`` with ``m`` a multiple of ``width``."""
    if expr.same_as(thread):
        return True
    if isinstance(expr, tirx.FloorMod | tirx.Mod) and expr.a.same_as(thread):
        modulus = const_int(expr.b)
        return modulus is not None and modulus > 0 and modulus % width == 0
    return False


def _power_of_two_below(value: int | None, width: int) -> bool:
    return value is not None and 0 < value < width and not value & (value - 1)


def xor_offset(call: Any, thread: Any) -> int | None:
    """``c`` when ``call`` is an idx-mode shuffle of the full warp reading lane
    ``lane ^ c`` (``c`` a constant power of two below the width), else None."""
    if shuffle_mode(call) != "idx" or const_int(call.args[0]) != FULL_MASK:
        return None
    width = const_int(call.args[3])
    operand = call.args[2]
    if width is None or not isinstance(operand, tirx.BitwiseXor):
        return None
    for lane, constant in ((operand.a, operand.b), (operand.b, operand.a)):
        offset = const_int(constant)
        if _is_lane(lane, thread, width) and _power_of_two_below(offset, width):
            return offset
    return None


def _same_value(a: Any, b: Any) -> bool:
    return bool(a.same_as(b) or tvm_ffi.structural_equal(a, b))


@dataclass(frozen=True)
class WarpReduction:
    """A butterfly reduction: ``kind`` of ``value`` over aligned groups of ``group``
    lanes, by xor offsets ``offsets`` (innermost first), shuffles of ``width`` lanes."""

    kind: str
    value: Any
    group: int
    offsets: tuple[int, ...]
    width: int

    @property
    def in_gpu_order(self) -> bool:
        """Whether the tree adds in the butterfly's order (offsets descending)."""
        return list(self.offsets) == sorted(self.offsets, reverse=True)


def match_warp_reduction(expr: Any, thread: Any) -> WarpReduction | None:
    """``expr`` as a butterfly reduction over the thread ``thread`` (module docstring),
    or None."""
    offsets: list[int] = []
    widths: list[int] = []
    kind = None
    node = expr
    while type(node) in _COMBINERS and kind in (None, _COMBINERS[type(node)]):
        level = None
        for shuffle, other in ((node.b, node.a), (node.a, node.b)):
            offset = xor_offset(shuffle, thread)
            if offset is not None and _same_value(shuffle.args[1], other):
                level = (offset, other, int(const_int(shuffle.args[3]) or 0))
                break
        if level is None:
            break
        kind = _COMBINERS[type(node)]
        offsets.append(level[0])
        node = level[1]
        widths.append(level[2])
    if kind is None:
        return None
    group = 2 * max(offsets)
    if sorted(offsets) != [1 << i for i in range(group.bit_length() - 1)]:
        return None
    return WarpReduction(kind, node, group, tuple(reversed(offsets)), max(widths))


def _parallel(name: str, extent: int, body_of: Any) -> Any:
    var = tirx.Var(name, "int32")
    return tirx.For(
        var, 0, extent, tirx.ForKind.SERIAL, body_of(var), annotations={LOOP_KIND_KEY: "parallel"}
    )


def _copy(out: Any, source: Any, dst: Any, src: Any, extent: int, name: str) -> Any:
    """``out[dst + l] = source[src + l]`` for ``l < extent`` (a T.Parallel loop)."""
    if extent == 1:
        return tirx.BufferStore(out, tirx.BufferLoad(source, [src]), [dst])
    return _parallel(
        name, extent, lambda i: tirx.BufferStore(out, tirx.BufferLoad(source, [src + i]), [dst + i])
    )


def _group_nest(threads: int, group: int, path: str, body_of: Any) -> Any:
    """A block-level ``T.Parallel`` loop over the groups, annotated with ``path``."""
    nest = _parallel("warp_group", threads // group, lambda g: body_of(g * group))
    annotations = {
        LOOP_KIND_KEY: "parallel",
        THREAD_PATH_KEY: tvm.ir.StringImm(path),
        GROUP_KEY: tirx.const(group, "int32"),
    }
    return rebuild_loop(nest, annotations=annotations)


def reduction_nest(reduction: WarpReduction, transfer: Any, threads: int, path: str) -> Any:
    """The block-level nest folding each group of ``transfer`` in place and broadcasting
    the result over the group (module docstring)."""
    s = reduction.group

    def body(base: Any) -> Any:
        steps: list[Any] = []
        half = s // 2
        while half >= 1:

            def fold(j: Any, half: int = half) -> Any:
                a = tirx.BufferLoad(transfer, [base + j])
                b = tirx.BufferLoad(transfer, [base + j + half])
                return tirx.BufferStore(transfer, _combine(reduction.kind, a, b), [base + j])

            steps.append(
                fold(tirx.const(0, "int32")) if half == 1 else _parallel(f"fold{half}", half, fold)
            )
            half //= 2
        total = tirx.BufferLoad(transfer, [base])
        steps.append(
            _parallel(
                "broadcast", s - 1, lambda j: tirx.BufferStore(transfer, total, [base + 1 + j])
            )
            if s > 2
            else tirx.BufferStore(transfer, total, [base + 1])
        )
        return tirx.SeqStmt(steps)

    return _group_nest(threads, s, path, body)


def uniform_shuffle(call: Any, thread: Any) -> tuple[str, int] | None:
    """``(form, constant)`` when ``call`` shuffles by a constant the lanes share:
    ``("xor", c)``, ``("down", d)``, ``("up", d)`` or ``("lane", src)``, else None."""
    mode = shuffle_mode(call)
    width = const_int(call.args[3])
    if mode is None or width is None or const_int(call.args[0]) != FULL_MASK:
        return None
    if mode == "idx":
        offset = xor_offset(call, thread)
        if offset is not None:
            return "xor", offset
        lane = const_int(call.args[2])
        return None if lane is None else ("lane", lane & (width - 1))
    delta = const_int(call.args[2])
    if delta is None or not 0 < delta < width:
        return None
    return mode, delta


def shuffle_nest(
    form: str, constant: int, width: int, transfer: Any, out: Any, threads: int, path: str
) -> Any:
    """The block-level nest writing each thread's shuffled value into ``out`` at its
    thread index, from the values in ``transfer`` (contiguous copies per group)."""

    def body(base: Any) -> Any:
        if form == "xor":
            pairs = width // (2 * constant)

            def swap(p: Any) -> Any:
                low = base + p * (2 * constant)
                high = low + constant
                return tirx.SeqStmt(
                    [
                        _copy(out, transfer, low, high, constant, "xor_low"),
                        _copy(out, transfer, high, low, constant, "xor_high"),
                    ]
                )

            return swap(tirx.const(0, "int32")) if pairs == 1 else _parallel("pair", pairs, swap)
        if form == "lane":
            source = tirx.BufferLoad(transfer, [base + constant])
            return _parallel("lane", width, lambda i: tirx.BufferStore(out, source, [base + i]))
        d = constant
        if form == "down":  # lane l reads l + d; the last d lanes keep their own
            moved = _copy(out, transfer, base, base + d, width - d, "down")
            kept = _copy(out, transfer, base + (width - d), base + (width - d), d, "kept")
        else:  # up: lane l reads l - d; the first d lanes keep their own
            moved = _copy(out, transfer, base + d, base, width - d, "up")
            kept = _copy(out, transfer, base, base, d, "kept")
        return tirx.SeqStmt([moved, kept])

    return _group_nest(threads, width, path, body)


def guard_groups(stmt: Any, thread: Any, condition: Any) -> Any:
    """``stmt`` with each block-level exchange nest's groups run under ``condition``
    (a condition on the thread index that holds for whole groups), evaluated at each
    group's first thread."""

    def guard(loop: Any) -> Any:
        if not loop.annotations or GROUP_KEY not in loop.annotations:
            return loop
        group = int(loop.annotations[GROUP_KEY])
        first = loop.loop_var * group
        if str(thread.ty.dtype) != "int32":
            first = tirx.Cast(str(thread.ty.dtype), first)
        at_group = substitute_vars(tirx.Evaluate(condition), {thread: first}).value
        body = tirx.IfThenElse(at_group, loop.body, None)
        return rebuild_loop(loop, body=body)

    return tvm_ffi.structural_map(stmt, [(tirx.For, guard)], order="post")
