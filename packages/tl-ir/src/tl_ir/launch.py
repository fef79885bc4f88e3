"""Inspecting a kernel's launch (`T.Kernel`) and the kinds of its loops.

Launch representation: ``T.Kernel(gx, gy, threads=(tx, ty))`` becomes nested
``thread_extent`` attributes on ``blockIdx.x``, ``blockIdx.y``, ``threadIdx.x``,
``threadIdx.y`` (TVM's ``launch_thread``), one per given dim, in that order.

Loop kinds: every loop made by a ``T.*`` loop construct carries the annotation
``{"tl.loop_kind": kind}`` with kind one of ``serial``, ``parallel``, ``pipelined``
(plus ``"num_stages": k``), ``unroll``, ``vectorized``. ``T.Parallel`` and
``T.Pipelined`` loops have TVM kind ``SERIAL``: they are tile loops that later passes
distribute or pipeline, and the annotation is what tells them apart. Plain
``range`` loops have no annotation; `loop_kind` then answers from the TVM ForKind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tvm_ffi
from tvm import tirx

from tl_ir.errors import UnsupportedError

__all__ = [
    "LOOP_KINDS",
    "LOOP_KIND_KEY",
    "NUM_STAGES_KEY",
    "PIPELINE_GROUP_KEY",
    "PIPELINE_ORDER_KEY",
    "PIPELINE_SCHEDULE_KEYS",
    "PIPELINE_STAGE_KEY",
    "KernelLaunch",
    "annotations_without",
    "kernel_launch",
    "kernel_launches",
    "loop_kind",
    "loops",
    "num_stages",
    "rebuild_loop",
]

LOOP_KIND_KEY = "tl.loop_kind"
NUM_STAGES_KEY = "num_stages"
#: ``T.Pipelined(order=, stage=, group=)``: TileLang's manual schedule of the body's
#: statements (lists of ints; ``group``: a list of lists), kept for pipelining targets.
PIPELINE_ORDER_KEY = "tl.pipeline_order"
PIPELINE_STAGE_KEY = "tl.pipeline_stage"
PIPELINE_GROUP_KEY = "tl.pipeline_group"
#: ``T.Pipelined``'s manual schedule keys, meaningless once a loop runs in order.
PIPELINE_SCHEDULE_KEYS: tuple[str, ...] = (
    PIPELINE_ORDER_KEY,
    PIPELINE_STAGE_KEY,
    PIPELINE_GROUP_KEY,
)
#: Every value of the ``tl.loop_kind`` annotation.
LOOP_KINDS: tuple[str, ...] = ("serial", "parallel", "pipelined", "unroll", "vectorized")

_BLOCK_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
_THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")


@dataclass(frozen=True)
class KernelLaunch:
    """The launch of a kernel.

    Attributes:
        grid: block-grid extents, one per bound ``blockIdx`` dim (x first).
        threads: thread-block extents, one per bound ``threadIdx`` dim (x first).
        block_vars: the Vars of ``blockIdx.x/y/z`` (same order as ``grid``).
        thread_vars: the Vars of ``threadIdx.x/y/z`` (same order as ``threads``).
    """

    grid: tuple[Any, ...]
    threads: tuple[Any, ...]
    block_vars: tuple[Any, ...]
    thread_vars: tuple[Any, ...]

    @property
    def num_threads(self) -> int | None:
        """Threads per block when every thread extent is constant, else None."""
        total = 1
        for extent in self.threads:
            if not isinstance(extent, tirx.IntImm):
                return None
            total *= int(extent.value)
        return total


def kernel_launches(func: Any) -> list[tuple[Any, KernelLaunch]]:
    """Every `T.Kernel` of ``func`` (a PrimFunc or a statement) in program order, as
    ``(statement, launch)`` pairs; the statement is the launch's outermost
    ``thread_extent`` attribute. Kernels of one prim_func run one after the other."""
    body = getattr(func, "body", func)
    roots: list[Any] = []

    def visit(stmt: Any) -> None:
        if stmt.attr_key == "thread_extent" and str(stmt.node.thread_tag) == _BLOCK_TAGS[0]:
            roots.append(stmt)

    tvm_ffi.structural_walk(body, (tirx.AttrStmt, visit), order="pre")
    launches = []
    for root in roots:
        launch = _single_launch(root)
        assert launch is not None
        launches.append((root, launch))
    return launches


def kernel_launch(func: Any) -> KernelLaunch | None:
    """The launch of ``func`` (a PrimFunc or a statement); None when it has no `T.Kernel`.

    Raises:
        UnsupportedError: ``func`` holds more than one `T.Kernel` (consecutive launches):
            a caller that handles them walks `kernel_launches` instead.
    """
    body = getattr(func, "body", func)
    launches = kernel_launches(body)
    if len(launches) > 1:
        raise UnsupportedError(
            f"this prim_func has {len(launches)} T.Kernel launches that run one after the "
            "other; this target's lowering supports one T.Kernel per prim_func (split "
            "the kernels into separate prim_funcs)"
        )
    return _single_launch(body)


def _single_launch(body: Any) -> KernelLaunch | None:
    found: dict[str, tuple[Any, Any]] = {}

    def visit(stmt: Any) -> None:
        if stmt.attr_key != "thread_extent":
            return
        tag = str(stmt.node.thread_tag)
        found.setdefault(tag, (stmt.value, stmt.node.var))

    tvm_ffi.structural_walk(body, (tirx.AttrStmt, visit), order="pre")
    if not found:
        return None
    blocks = [found[t] for t in _BLOCK_TAGS if t in found]
    threads = [found[t] for t in _THREAD_TAGS if t in found]
    return KernelLaunch(
        grid=tuple(e for e, _ in blocks),
        threads=tuple(e for e, _ in threads),
        block_vars=tuple(v for _, v in blocks),
        thread_vars=tuple(v for _, v in threads),
    )


_FORKIND_NAMES = {
    int(tirx.ForKind.SERIAL.value): "serial",
    int(tirx.ForKind.PARALLEL.value): "parallel",
    int(tirx.ForKind.VECTORIZED.value): "vectorized",
    int(tirx.ForKind.UNROLLED.value): "unroll",
}


def loop_kind(loop: Any) -> str:
    """The kernel-language kind of a ``For``: one of `LOOP_KINDS` (or ``"thread_binding"``)."""
    annotations = loop.annotations
    if annotations is not None and LOOP_KIND_KEY in annotations:
        return str(annotations[LOOP_KIND_KEY])
    return _FORKIND_NAMES.get(int(loop.kind), "thread_binding")


def num_stages(loop: Any) -> int | None:
    """The ``num_stages`` of a ``T.Pipelined`` loop; None for any other loop."""
    annotations = loop.annotations
    if annotations is None or NUM_STAGES_KEY not in annotations:
        return None
    return int(annotations[NUM_STAGES_KEY])


def loops(func: Any) -> list[Any]:
    """Every ``For`` of ``func`` (a PrimFunc or a statement), outermost first."""
    body = getattr(func, "body", func)
    found: list[Any] = []
    tvm_ffi.structural_walk(body, (tirx.For, found.append), order="pre")
    return found


class _Keep:
    """The default of `rebuild_loop`'s fields: keep the loop's own value."""

    def __repr__(self) -> str:
        return "KEEP"


_KEEP: Any = _Keep()


def rebuild_loop(
    loop: Any,
    *,
    body: Any = _KEEP,
    kind: Any = _KEEP,
    annotations: Any = _KEEP,
    extent: Any = _KEEP,
) -> Any:
    """A copy of the ``For`` ``loop`` with the given fields replaced.

    Every field not given is kept as it is: the loop variable, ``min``,
    ``extent``, kind, body, thread binding (while the kind stays
    ``THREAD_BINDING``), annotations, step and span. An
    ``annotations`` of None or an empty mapping means "no annotations". This
    is the one way a pass rebuilds a loop, so a new ``For`` field is carried
    over in one place.

    Raises:
        TypeError: ``loop`` is not a ``tirx.For``.
    """
    if not isinstance(loop, tirx.For):
        raise TypeError(f"rebuild_loop: expected a tirx.For, got {type(loop).__name__}")
    new_kind = loop.kind if kind is _KEEP else kind
    # A thread binding belongs to a THREAD_BINDING loop only; a loop made serial,
    # parallel or vectorized runs on no thread axis.
    binding = loop.thread_binding if new_kind == tirx.ForKind.THREAD_BINDING else None
    return tirx.For(
        loop.loop_var,
        loop.min,
        loop.extent if extent is _KEEP else extent,
        new_kind,
        loop.body if body is _KEEP else body,
        binding,
        loop.annotations if annotations is _KEEP else (annotations or None),
        loop.step,
        loop.span,
    )


def annotations_without(loop: Any, keys: Any) -> dict[str, Any]:
    """The annotations of the ``For`` ``loop`` as a dict, less the names in ``keys``."""
    items = loop.annotations.items() if loop.annotations else []
    dropped = frozenset(keys)
    return {str(k): v for k, v in items if k not in dropped}
