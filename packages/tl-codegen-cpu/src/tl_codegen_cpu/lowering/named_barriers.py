"""When a named barrier (``T.sync_threads(id, count)``) is a region boundary on CPU.

On a GPU a named barrier waits until ``count`` threads of the block have reached
barrier ``id``. On the CPU the block's threads are loops split into regions at
barriers (`thread_regions`), and every region boundary waits for *all* threads.
The two agree when the threads that reach the named barrier are exactly the
``count`` threads of a condition on the thread index that encloses it
(``if tx < 256: ... T.sync_threads(3, 256) ...``), or the whole block: then
each region of the conditional code is a loop over all threads that runs the
code for the threads of the condition, which is one order the GPU could run
the barrier in (the other threads take no part in it and run nothing in
between). Any other case (a count that differs from the number of threads
that reach the barrier, or a condition that reads memory, so that the number
is not known when the kernel is compiled) is refused.
"""

from __future__ import annotations

from functools import reduce
from itertools import product
from typing import Any

import tvm
from tvm import tirx

from tl_codegen_cpu.lowering.thread_ir import ThreadSpace
from tl_ir.barriers import named_barrier
from tl_ir.errors import UnsupportedError
from tl_ir.ops import const_int
from tl_passes.buffer_rewrite import substitute_vars

#: Threads per block up to which the threads reaching a named barrier are counted one by
#: one (the condition is evaluated for each thread when the kernel is compiled).
MAX_COUNTED_THREADS = 4096


def check_named_barrier(stmt: Any, guards: list[Any], space: ThreadSpace, where: str) -> None:
    """Refuse the named barrier ``stmt`` unless a whole-block barrier in its place means
    the same (module docstring).

    Args:
        stmt: the barrier statement (`tl_ir.barriers.named_barrier` is not None).
        guards: the thread-dependent conditions that enclose it.
        space: the block's threads.
        where: pass and function name, for the messages.

    Raises:
        UnsupportedError: the threads that reach it are not known at compile time, or
            their number is not the barrier's count.
    """
    found = named_barrier(stmt)
    assert found is not None
    ident, count = found
    name = f"T.sync_threads({ident}, {count})"
    reaching = _threads_reaching(guards, space, f"{where}: {name}")
    if reaching != count:
        raise UnsupportedError(
            f"{where}: {name} is reached by {reaching} threads of the block, not {count}; "
            "on CPU targets a named barrier must be reached by exactly its arrive_count "
            "threads (every thread of the block, or those of an enclosing condition on "
            "the thread index such as `if tx < 128:`)"
        )


def _threads_reaching(guards: list[Any], space: ThreadSpace, where: str) -> int:
    extents = [const_int(e) for e in space.extents]
    if any(e is None for e in extents):
        raise UnsupportedError(f"{where}: on CPU targets a named barrier needs constant threads")
    sizes = [int(e) for e in extents if e is not None]
    total = reduce(lambda a, b: a * b, sizes, 1)
    if not guards:
        return total
    if total > MAX_COUNTED_THREADS:
        raise UnsupportedError(
            f"{where}: on CPU targets a named barrier under a condition needs at most "
            f"{MAX_COUNTED_THREADS} threads per block, got {total}"
        )
    condition = reduce(tirx.And, guards[1:], guards[0])
    analyzer = tvm.sym.Analyzer()
    reaching = 0
    for coordinates in product(*(range(size) for size in sizes)):
        mapping = {
            var: tirx.const(value, var.ty.dtype)
            for var, value in zip(space.variables, coordinates, strict=True)
        }
        holds = const_int(
            analyzer.simplify(substitute_vars(tirx.Evaluate(condition), mapping).value)
        )
        if holds is None:
            raise UnsupportedError(
                f"{where}: on CPU targets a named barrier must sit under conditions on the "
                f"thread index alone, so that the threads reaching it are known; got {condition}"
            )
        reaching += bool(holds)
    return reaching
