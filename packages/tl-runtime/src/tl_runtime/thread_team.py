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

``OMP_NUM_THREADS`` is checked at the same moment (`apply_thread_count_env`): a first value
above `max_team_threads` (``OMP_NUM_THREADS=100000`` made libgomp fail to build the team and
end the process, by SIGSEGV or ``exit(1)``) is lowered to that bound, and a malformed value
is removed, each with one warning; parallel launches then never use more threads than
that bound (`thread_count_env`).
"""

from __future__ import annotations

import operator
import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

from tl_runtime.fork_safety import ForkSafeLock

WAIT_POLICY_ENV = "OMP_WAIT_POLICY"
SPIN_COUNT_ENV = "GOMP_SPINCOUNT"
THREAD_COUNT_ENV = "OMP_NUM_THREADS"
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
    apply_thread_count_env()
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


@dataclass(frozen=True)
class ThreadCountEnv:
    """What tl_runtime made of ``OMP_NUM_THREADS`` (`decide_thread_count_env`).

    Attributes:
        replacement: the variable's new value; None to remove it (malformed); equal to the
            old value (or None when unset) when nothing changes (``changed`` False).
        changed: whether the variable is rewritten or removed.
        threads: the most threads a parallel launch gets by default (the bound, when the
            value was above it); 0 when nothing is bounded beyond OpenMP's own default.
        warning: the one warning to give (empty when nothing changed).
    """

    replacement: str | None
    changed: bool
    threads: int
    warning: str


_COUNT = re.compile(r"\A\s*\+?[0-9]+\s*\Z")
_thread_env: ThreadCountEnv | None = None
_thread_env_lock = ForkSafeLock()


def decide_thread_count_env(value: str | None, limit: int) -> ThreadCountEnv:
    """What to do with ``OMP_NUM_THREADS`` = ``value`` under the bound ``limit`` (pure).

    The OpenMP runtime takes a positive int or a comma-separated list of them (one per
    nesting level); only the first one sizes the teams of tl_runtime's launches.

    Args:
        value: the variable's value, None when unset.
        limit: the largest team to allow (`max_team_threads`, `set_num_threads`'s bound).

    Returns:
        Unset or blank, or a first value in [1, ``limit``]: no change. A first value above
        ``limit``: that value replaced by ``limit`` (the rest of the list kept), and
        ``threads`` = ``limit``. Anything else (``"abc"``, ``"0"``, ``"-2"``, ``"1.5"``):
        the variable removed (OpenMP's default, one thread per CPU, applies).
    """
    if value is None or not value.strip():
        return ThreadCountEnv(value, False, 0, "")
    first, *rest = value.split(",")
    digits = first.strip().lstrip("+").lstrip("0")
    if _COUNT.match(first) and digits:  # a positive int
        # More digits than the limit's is above it (int() of thousands of digits refuses).
        if len(digits) <= len(str(limit)) and int(digits) <= limit:
            return ThreadCountEnv(value, False, 0, "")
        replacement = ",".join([str(limit), *rest])
        return ThreadCountEnv(
            replacement,
            True,
            limit,
            f"{THREAD_COUNT_ENV}={_shown(value)} asks for more threads than tl_runtime allows "
            f"(at most {limit}: {THREADS_PER_CPU_LIMIT} per CPU, {available_cpus()} CPUs here; "
            "an OpenMP runtime may fail to build such a team and end the process); "
            f"parallel kernels use at most {limit} threads ({THREAD_COUNT_ENV}={replacement})",
        )
    return ThreadCountEnv(
        None,
        True,
        0,
        f"{THREAD_COUNT_ENV}={_shown(value)} is malformed (expected a positive int, at most "
        f"{limit}, or a comma-separated list of them); tl_runtime removed it, so parallel "
        f"kernels use OpenMP's default (one thread per CPU, {available_cpus()} here)",
    )


def _shown(value: str) -> str:
    """``value`` quoted for a message, cut to 60 characters."""
    return repr(value) if len(value) <= 60 else repr(value[:60]) + "..."


def apply_thread_count_env() -> ThreadCountEnv:
    """Check ``OMP_NUM_THREADS`` once per process and bound it (`decide_thread_count_env`).

    Runs when ``tl_runtime`` (or ``tl_jit``) is imported and again before the first kernel
    library loads (idempotent, thread-safe; the first call decides): a value above
    `max_team_threads` is lowered to that bound in the environment, before the OpenMP
    runtime reads it, and a malformed one is removed, each with one ``RuntimeWarning``
    naming the variable, the value and the bound. The context helper's launches never
    use more than ``threads`` by default either (`tl_runtime.context`), so the bound holds
    even when an OpenMP runtime (torch's) had read the variable before.

    Returns:
        The `ThreadCountEnv` of this process.
    """
    global _thread_env
    with _thread_env_lock:
        if _thread_env is not None:
            return _thread_env
        decision = decide_thread_count_env(os.environ.get(THREAD_COUNT_ENV), max_team_threads())
        if decision.changed:
            if decision.replacement is None:
                os.environ.pop(THREAD_COUNT_ENV, None)
            else:
                os.environ[THREAD_COUNT_ENV] = decision.replacement
        _thread_env = decision
    if decision.changed:  # outside the lock: a filter may make the warning an exception
        warnings.warn(decision.warning, RuntimeWarning, stacklevel=2)
    return decision


def thread_count_env() -> ThreadCountEnv:
    """What tl_runtime made of ``OMP_NUM_THREADS`` (checks it first if nobody did)."""
    return apply_thread_count_env()
