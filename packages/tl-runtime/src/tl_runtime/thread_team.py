"""The CPU thread team's settings: how idle workers wait, and how many threads may run.

Idle OpenMP workers that spin hold cores the rest of the machine needs, and on a busy
machine they make a kernel's time a measure of the scheduler rather than of the kernel
(a 0.4 ms GEMM timed at 35 ms). The OpenMP runtime (libgomp, LLVM's libomp) reads
``OMP_WAIT_POLICY`` once, when it is loaded into the process, so the default has to be in
the environment before then: `apply_default_wait_policy` runs when ``tl_runtime`` or
``tl_jit`` is imported, before anything they import can load an OpenMP runtime (tvm,
through torch, loads libgomp; a ``c`` kernel links it; the ``llvm`` kernels' parallel
launches run on the context helper's OpenMP team).

The rule: a wait policy the user chose is never touched (``OMP_WAIT_POLICY``, or
``GOMP_SPINCOUNT``, libgomp's own spin bound, set to anything); otherwise the process
gets ``OMP_WAIT_POLICY=PASSIVE`` (idle workers sleep at once). `thread_policy` reports
what applies and whether it reached the OpenMP runtime: it did not when an OpenMP runtime
was already loaded (``import torch`` before ``tl_jit``), which the profiler warns about.
"""

from __future__ import annotations

import operator
import os
from dataclasses import dataclass
from pathlib import Path

from tl_runtime.fork_safety import ForkSafeLock

WAIT_POLICY_ENV = "OMP_WAIT_POLICY"
SPIN_COUNT_ENV = "GOMP_SPINCOUNT"
DEFAULT_WAIT_POLICY = "PASSIVE"
"""The wait policy the process gets when the user chose none: idle workers sleep."""
THREADS_PER_CPU_LIMIT = 64
"""`set_num_threads` accepts at most this many threads per CPU the process may run on."""
_OPENMP_RUNTIMES = ("libgomp", "libomp", "libiomp")


@dataclass(frozen=True)
class ThreadPolicy:
    """How the process's OpenMP workers wait when idle.

    Attributes:
        wait_policy: ``OMP_WAIT_POLICY`` as the process has it (``""`` when unset, as
            happens when the user bounded the spin with ``GOMP_SPINCOUNT`` instead).
        chosen_by: ``"user"`` (the environment had ``OMP_WAIT_POLICY`` or
            ``GOMP_SPINCOUNT`` before tl_runtime looked) or ``"tl_runtime"`` (the default).
        effective: False when an OpenMP runtime was already loaded when the default was
            set, so it still runs with its own default (workers spin before sleeping).
        detail: one sentence saying what applies and why.
    """

    wait_policy: str
    chosen_by: str
    effective: bool
    detail: str


_lock = ForkSafeLock()
_policy: ThreadPolicy | None = None


def loaded_openmp_runtimes(maps: Path = Path("/proc/self/maps")) -> tuple[str, ...]:
    """The OpenMP runtime libraries mapped into this process (empty where unknown).

    Read from ``/proc/self/maps`` (Linux); elsewhere nothing can be said, and the
    result is empty.
    """
    try:
        text = maps.read_text()
    except OSError:
        return ()
    found = []
    for line in text.splitlines():
        path = line.rsplit(" ", 1)[-1]
        name = os.path.basename(path)
        if name.startswith(_OPENMP_RUNTIMES) and ".so" in name and path not in found:
            found.append(path)
    return tuple(found)


def decide_wait_policy(
    environ: dict[str, str] | os._Environ[str], already_loaded: tuple[str, ...]
) -> tuple[dict[str, str], ThreadPolicy]:
    """What to add to ``environ`` and the resulting policy (pure: changes nothing).

    Args:
        environ: the process environment (or a stand-in, in tests).
        already_loaded: OpenMP runtimes already mapped into the process.

    Returns:
        ``(additions, policy)``: the variables to set (empty when the user chose) and
        the `ThreadPolicy` that follows.
    """
    user_policy = environ.get(WAIT_POLICY_ENV)
    user_spin = environ.get(SPIN_COUNT_ENV)
    if user_policy is not None or user_spin is not None:
        chosen = f"{WAIT_POLICY_ENV}={user_policy}" if user_policy is not None else ""
        if user_spin is not None:
            chosen = ", ".join(filter(None, [chosen, f"{SPIN_COUNT_ENV}={user_spin}"]))
        return {}, ThreadPolicy(
            user_policy or "", "user", True, f"the user's choice ({chosen}) is kept"
        )
    if already_loaded:
        return {WAIT_POLICY_ENV: DEFAULT_WAIT_POLICY}, ThreadPolicy(
            DEFAULT_WAIT_POLICY,
            "tl_runtime",
            False,
            f"an OpenMP runtime ({', '.join(os.path.basename(p) for p in already_loaded)}) "
            f"was loaded before tl_runtime set {WAIT_POLICY_ENV}={DEFAULT_WAIT_POLICY}, so "
            "its idle workers spin before sleeping; import tl_jit (or tl_runtime) before "
            f"torch or tvm, or start the process with {WAIT_POLICY_ENV}=passive",
        )
    return {WAIT_POLICY_ENV: DEFAULT_WAIT_POLICY}, ThreadPolicy(
        DEFAULT_WAIT_POLICY,
        "tl_runtime",
        True,
        f"{WAIT_POLICY_ENV}={DEFAULT_WAIT_POLICY} (tl_runtime's default: idle workers "
        "sleep; set OMP_WAIT_POLICY=active to make them spin)",
    )


def apply_default_wait_policy() -> ThreadPolicy:
    """Put the default wait policy in the environment unless the user chose one (once).

    Idempotent and thread-safe; the first call decides. Child processes inherit the
    variable.

    Returns:
        The `ThreadPolicy` of this process.
    """
    global _policy
    with _lock:
        if _policy is None:
            additions, policy = decide_wait_policy(os.environ, loaded_openmp_runtimes())
            os.environ.update(additions)
            _policy = policy
        return _policy


def thread_policy() -> ThreadPolicy:
    """The wait policy of this process's OpenMP workers (applies the default first)."""
    return apply_default_wait_policy()


def available_cpus() -> int:
    """How many CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def max_team_threads() -> int:
    """The largest thread count `set_num_threads` accepts on this machine.

    ``THREADS_PER_CPU_LIMIT`` per available CPU: enough to oversubscribe on purpose,
    never so many that the OpenMP runtime runs out of memory building the team.
    """
    return THREADS_PER_CPU_LIMIT * available_cpus()


def validate_thread_count(count: object) -> int:
    """Return ``count`` if `set_num_threads` may use it, else raise.

    Raises:
        ValueError: ``count`` is not an int, is negative, or exceeds `max_team_threads`
            (the message names the parameter, the range and the value).
    """
    limit = max_team_threads()
    expected = (
        f"expected an int >= 0 and <= {limit} (0 = all cores; at most "
        f"{THREADS_PER_CPU_LIMIT} threads per CPU, {available_cpus()} CPUs here)"
    )
    # An integer of any type (numpy's too: a count computed with numpy is still a
    # count); a bool is not a count.
    try:
        value = None if isinstance(count, bool) else operator.index(count)  # type: ignore[arg-type]
    except TypeError:
        value = None
    if value is None or not 0 <= value <= limit:
        raise ValueError(f"set_num_threads: count: {expected}, got {count!r}")
    return value
