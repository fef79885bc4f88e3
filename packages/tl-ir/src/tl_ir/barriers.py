"""Named barriers: ``T.sync_threads(barrier_id, arrive_count)`` in the IR.

A named barrier is TileLang's spelling of a barrier among part of a block's
threads: the first ``arrive_count`` threads that reach barrier ``barrier_id``
wait for each other (CUDA's ``bar.sync id, count``). In the IR it is the block
barrier intrinsic with two more arguments, ``tvm_storage_sync("shared", id,
count)``, as TileLang builds it, so every pass that orders shared-memory accesses
at barriers sees it as one; the passes that lower barriers ask `named_barrier`
for its id and count.
"""

from __future__ import annotations

from typing import Any

import tvm
from tvm import tirx

from tl_ir import scopes
from tl_ir.errors import KernelTypeError
from tl_ir.ops import const_int

__all__ = ["MAX_BARRIER_ID", "NamedBarrier", "make_named_barrier", "named_barrier"]

#: Barrier ids are 0..15 (sixteen hardware barriers per block on NVIDIA GPUs); id 0 is
#: the one ``T.sync_threads()`` uses for the whole block.
MAX_BARRIER_ID = 15

_STORAGE_SYNC = "tirx.tvm_storage_sync"


class NamedBarrier(tuple[int, int]):
    """``(barrier_id, arrive_count)`` of a named barrier."""

    @property
    def barrier_id(self) -> int:
        """Which of the block's barriers (1..15)."""
        return self[0]

    @property
    def arrive_count(self) -> int:
        """How many threads the barrier waits for."""
        return self[1]


def make_named_barrier(barrier_id: Any, arrive_count: Any) -> Any:
    """The named-barrier call for ``T.sync_threads(barrier_id, arrive_count)``.

    Raises:
        KernelTypeError: an argument is not a constant integer, ``barrier_id`` is
            outside 1..15 (0 is the whole block's barrier) or ``arrive_count`` is not
            positive.
    """
    where = f"T.sync_threads({barrier_id!r}, {arrive_count!r})"
    ident = const_int(barrier_id)
    count = const_int(arrive_count)
    if ident is None or isinstance(barrier_id, bool):
        raise KernelTypeError(f"{where}: barrier_id must be a constant int, got {barrier_id!r}")
    if count is None or isinstance(arrive_count, bool):
        raise KernelTypeError(f"{where}: arrive_count must be a constant int, got {arrive_count!r}")
    if not 1 <= ident <= MAX_BARRIER_ID:
        raise KernelTypeError(
            f"{where}: barrier_id must be in 1..{MAX_BARRIER_ID} (barrier 0 is the whole "
            f"block's, used by T.sync_threads()), got {ident}"
        )
    if count < 1:
        raise KernelTypeError(f"{where}: arrive_count must be a positive thread count, got {count}")
    return tirx.call_intrin(
        "int32",
        _STORAGE_SYNC,
        tvm.ir.StringImm(scopes.SHARED),
        tirx.IntImm("int32", ident),
        tirx.IntImm("int32", count),
    )


def named_barrier(node: Any) -> NamedBarrier | None:
    """``(barrier_id, arrive_count)`` when ``node`` (a call or its ``Evaluate``) is a
    named barrier; None for anything else, a whole-block barrier included."""
    call = node.value if isinstance(node, tirx.Evaluate) else node
    if not isinstance(call, tvm.ir.Call) or str(getattr(call.op, "name", "")) != _STORAGE_SYNC:
        return None
    if len(call.args) != 3:
        return None
    ident, count = const_int(call.args[1]), const_int(call.args[2])
    if ident is None or count is None:
        return None
    return NamedBarrier((ident, count))
