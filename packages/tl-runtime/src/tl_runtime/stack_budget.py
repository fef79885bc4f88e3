"""Stack budget: a kernel's block-local stack arrays against the stacks of the threads that run it.

Kernels built for the ``c`` target keep each block's tiles in arrays on the stack of the
thread that runs the block (up to the backend's budget, 1 MiB per block); the manifest
records the size as ``stack_bytes``. Blocks run on OpenMP worker threads, whose stacks
are ``OMP_STACKSIZE`` (or ``GOMP_STACKSIZE``) or else the default thread stack size that
glibc derives from ``ulimit -s``, and on the calling thread (every block of a serial run,
and block 0 of a parallel one). A stack too small for the arrays is not an error the
kernel could report: the process dies of SIGSEGV. So:

- at load, `check_worker_stacks` refuses, with `StackBudgetError`, a kernel whose need
  (``stack_bytes`` plus `STACK_MARGIN_BYTES` for the frames around the arrays) exceeds
  the OpenMP workers' stacks (they are fixed when OpenMP starts: only a new process with
  a larger ``OMP_STACKSIZE`` helps), and raises the stacks of the runtime helper's own
  pthread team to the need;
- at call time, `guard_calling_thread_stack` makes a call whose calling thread has less
  stack left than the need run on a runtime thread created with enough stack (the caller
  waits for it), so a kernel works from a main thread under ``ulimit -s 1024`` or from a
  thread made with a small ``threading.stack_size``.

Kernels with ``stack_bytes == 0`` (``llvm``, whose tiles are heap workspaces; artifacts
written before the field existed) are not checked and pay nothing per call.
"""

from __future__ import annotations

import os
import re
import resource
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tl_runtime.errors import StackBudgetError
from tl_runtime.manifest import Manifest

if TYPE_CHECKING:  # imported on first use: loading a kernel must stay cheap
    from concurrent.futures import ThreadPoolExecutor

#: Stack a kernel needs besides its arrays: its own frame and the OpenMP runtime's and
#: tvm-ffi's frames between the caller and the block (a few KiB), with room to spare.
STACK_MARGIN_BYTES = 128 << 10

#: A thread that had this much beyond a kernel's need at one call is not checked again.
_THREAD_VERDICT_HEADROOM_BYTES = 1 << 20

_STACK_SIZE_SYNTAX = re.compile(r"^\s*(\d+)\s*([bkmgBKMG]?)\s*$")
_UNIT = {"": 1 << 10, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def stack_need_bytes(manifest: Manifest) -> int:
    """Return the stack a block of the kernel needs: its arrays plus the margin (0 if none)."""
    return manifest.stack_bytes + STACK_MARGIN_BYTES if manifest.stack_bytes else 0


def parse_stack_size(text: str) -> int | None:
    """Parse an ``OMP_STACKSIZE`` value the way OpenMP does (``size[B|K|M|G]``, default K).

    Returns:
        The size in bytes, or None for text OpenMP ignores.
    """
    match = _STACK_SIZE_SYNTAX.match(text)
    if match is None:
        return None
    return int(match.group(1)) * _UNIT[match.group(2).lower()]


def openmp_worker_stack() -> tuple[int, str]:
    """Return the stack size of OpenMP worker threads and where it comes from.

    ``OMP_STACKSIZE`` wins over ``GOMP_STACKSIZE``; without either the workers get the
    default thread stack size, which glibc takes from ``ulimit -s`` at process start
    (read from the C helper; from RLIMIT_STACK when the helper is unavailable, 8 MiB
    when unlimited).
    """
    for variable in ("OMP_STACKSIZE", "GOMP_STACKSIZE"):
        value = os.environ.get(variable)
        size = parse_stack_size(value) if value is not None else None
        if size is not None:
            return size, f"{variable}={value}"
    from tl_runtime.context import default_thread_stack_bytes

    default = default_thread_stack_bytes()
    if default is None:
        soft, _hard = resource.getrlimit(resource.RLIMIT_STACK)
        default = 8 << 20 if soft == resource.RLIM_INFINITY else int(soft)
    return default, "the default thread stack size, from `ulimit -s`, as OMP_STACKSIZE is unset"


def _mib_ceiling(nbytes: int) -> int:
    return -(-nbytes // (1 << 20))


def check_worker_stacks(manifest: Manifest) -> None:
    """Refuse a kernel whose blocks do not fit on the OpenMP workers' stacks (at load).

    Also raises the runtime helper's pthread team stacks to the kernel's need. A process
    forked after OpenMP started runs OpenMP kernels on the calling thread only (teams of
    one), so there only the calling thread counts (see `guard_calling_thread_stack`).

    Raises:
        StackBudgetError: the need exceeds the workers' stack size; the message names
            the kernel, the need, the limit and the variable to set.
    """
    need = stack_need_bytes(manifest)
    if need == 0:
        return
    from tl_runtime.context import is_forked_child, require_team_stack

    require_team_stack(need)
    if is_forked_child():
        return
    limit, source = openmp_worker_stack()
    if need > limit:
        raise StackBudgetError(
            f"kernel {manifest.name!r} keeps {manifest.stack_bytes} bytes of block-local "
            f"arrays on each thread's stack ({need} bytes with {STACK_MARGIN_BYTES} for its "
            f"frames), more than the {limit} bytes OpenMP worker threads get ({source}); "
            f"start the process with OMP_STACKSIZE={_mib_ceiling(need)}M or more, or use "
            "smaller tiles (or target llvm, whose tiles are on the heap)"
        )


_executors: dict[int, ThreadPoolExecutor] = {}
_executors_lock = threading.Lock()


def _forget_executors_after_fork() -> None:
    # A forked child has none of the parent's threads: an inherited executor would
    # count its dead thread and never start another (a call would wait forever).
    global _executors_lock
    _executors.clear()
    _executors_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_executors_after_fork)


def _big_stack_executor(need: int) -> ThreadPoolExecutor:
    """One runtime thread per stack size, created on first use.

    The size is the need rounded up to MiB plus 1 MiB for the frames of the executor's
    own loop and the call path above the kernel.
    """
    from concurrent.futures import ThreadPoolExecutor

    size = (_mib_ceiling(need) + 1) << 20
    with _executors_lock:
        executor = _executors.get(size)
        if executor is None:
            executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tl-big-stack")
            previous = threading.stack_size(size)
            try:
                # ThreadPoolExecutor starts its thread on the first submit: with this size.
                executor.submit(int).result()
            finally:
                threading.stack_size(previous)
            _executors[size] = executor
        return executor


def guard_calling_thread_stack(manifest: Manifest, call: Callable[..., Any]) -> Callable[..., Any]:
    """Return ``call``, or a wrapper that runs it where the kernel's blocks fit.

    The wrapper compares the calling thread's stack left with the kernel's need (once per
    thread where it exceeds the need by 1 MiB, else on every call); when it is short, the call runs on a runtime thread with a large enough stack
    while the caller waits (results and exceptions come back unchanged). Kernels without
    stack arrays, and processes without the C helper (the stack left cannot be read),
    get ``call`` itself.
    """
    need = stack_need_bytes(manifest)
    if need == 0:
        return call
    from tl_runtime.context import stack_left_function

    stack_left = stack_left_function()
    if stack_left is None:
        return call

    roomy = threading.local()  # .yes: this thread had need + headroom left once

    def call_where_the_stack_fits(*args: Any) -> Any:
        if getattr(roomy, "yes", False):
            return call(*args)
        left = stack_left()
        if left == 0 or left >= need:  # 0: bounds unknown (not a thread glibc made)
            # Far more than the need: later calls from this thread skip the reading (the
            # frames above a kernel call stay far smaller than the headroom).
            roomy.yes = left == 0 or left >= need + _THREAD_VERDICT_HEADROOM_BYTES
            return call(*args)
        return _big_stack_executor(need).submit(call, *args).result()

    return call_where_the_stack_fits
