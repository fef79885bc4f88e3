"""Running one task per configuration on an executor, each failing alone.

The default executor is a pool of worker processes (`pebble.ProcessPool`, started with
``spawn``): a task that kills its worker (abort, segfault, ``os._exit``) fails alone,
with the worker's exit status, and the pool starts a new worker; a task running past
the per-configuration time limit is cancelled, which kills its worker. Any object with
``submit(fn, *args) -> concurrent.futures.Future`` works as an executor (a
``ThreadPoolExecutor``, a `tl_jit.distributed.RayExecutor`); there a running task past
its limit is cancelled if the executor can cancel it, and given up on otherwise.

At most ``in_flight`` tasks are outstanding at once, so a task's time limit counts
from when it can start, not from when the search began. ``KeyboardInterrupt`` cancels
every outstanding task (killing local workers) before it propagates.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

POLL_S = 0.1
"""How often the runner checks the time limits of running tasks."""


class Executor(Protocol):
    """What ``executor=`` accepts: the submit half of `concurrent.futures.Executor`."""

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> concurrent.futures.Future[Any]:
        """Schedule ``fn(*args)``; returns its future."""
        ...


@dataclass(frozen=True)
class TaskFailure:
    """Why one task gave no result: its stage, the reason, and the exception if any."""

    stage: str
    reason: str
    exception: BaseException | None = None


def describe_failure(exc: BaseException) -> str:
    """A one-line reason for a failed task (a dead worker named by its exit status; a
    message whose first line only introduces the next ones keeps them, joined)."""
    exitcode = getattr(exc, "exitcode", None)
    if type(exc).__name__ == "ProcessExpired" and isinstance(exitcode, int):
        if exitcode < 0:
            import signal

            try:
                name = signal.Signals(-exitcode).name
            except ValueError:
                name = f"signal {-exitcode}"
            return f"its worker process died ({name})"
        return f"its worker process exited with status {exitcode}"
    if isinstance(exc, SystemExit):
        return f"SystemExit: the task called sys.exit({exc.code!r})"
    if not isinstance(exc, Exception) and not str(exc):
        return f"{type(exc).__name__} raised inside the task"
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    # One line, but the reason whole: a first line that only introduces what follows
    # ("... differs from ref_fn:") takes the next lines with it, up to a few hundred
    # characters (the shapes or mismatch counts that say why).
    text = lines[0] if lines else ""
    for line in lines[1:]:
        if not text.endswith(":"):
            break
        text = f"{text} {line}"
        if len(text) > 300:
            text = text[:297] + "..."
            break
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def raised_by_task(future: concurrent.futures.Future[Any], exc: BaseException) -> bool:
    """Whether ``exc``, raised by ``future.result()``, is the task's own exception (and
    not a signal that arrived in this process meanwhile)."""
    try:
        return future.done() and future.exception(timeout=0) is exc
    except (concurrent.futures.CancelledError, concurrent.futures.TimeoutError):
        return False


PARENT_POLL_SECONDS = 0.5
"""How often a worker checks that the process that made its pool is still there."""


def die_with_parent(parent: int) -> None:
    """Worker initializer: end the worker when process ``parent`` (the search) is gone.

    A worker busy with a build that never ends (a hanging configuration) or started while
    the search was interrupted could outlive it, orphaned, holding the pipes its parent's
    caller reads (a ``subprocess`` running the search waited on them forever). On Linux the
    kernel kills the worker when the thread that started it ends (``PR_SET_PDEATHSIG``);
    everywhere a daemon thread checks the parent every `PARENT_POLL_SECONDS` (that one
    cannot stop a build that holds the GIL).
    """
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # gone before the watch began
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="tl_jit parent watch", daemon=True).start()


JOIN_SECONDS = 30.0
"""How long stopping a local worker pool waits for it to wind down (`LocalProcessPool.shutdown`)."""


class LocalProcessPool:
    """The default executor: spawned worker processes that survive the death of any one
    of them (`pebble.ProcessPool`); cancelling a running task kills its worker.

    Args:
        workers: how many worker processes.
    """

    ships_work = True
    """Tasks run in other processes (their arguments are pickled)."""

    def __init__(self, workers: int) -> None:
        import pebble

        self.max_workers = workers
        self._pool = pebble.ProcessPool(
            max_workers=workers,
            context=multiprocessing.get_context("spawn"),
            initializer=die_with_parent,
            initargs=(os.getpid(),),
        )

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> concurrent.futures.Future[Any]:
        """Schedule ``fn(*args)`` on a worker process; returns its future."""
        future: concurrent.futures.Future[Any] = self._pool.schedule(fn, args=args)
        return future

    def shutdown(self) -> None:
        """Stop the workers and wait for the pool to wind down, at most `JOIN_SECONDS`.

        Every worker process is killed first (a busy one holds a build that may never end:
        a hanging configuration, or one an interrupted search left running). pebble's own
        stop terminates workers only after its manager threads let go, and those can wait
        on a channel lock a killed worker held (a minute each time), so the join runs in a
        daemon thread and a pool that has not wound down in time is left to exit with the
        process instead of holding the caller (a Ctrl-C) there.
        """
        self._pool.stop()  # type: ignore[no-untyped-call]
        for process in self._workers():
            with contextlib.suppress(OSError, ValueError, AttributeError):
                if process.is_alive():
                    process.kill()
        joiner = threading.Thread(target=self._join, name="tl_jit pool join", daemon=True)
        joiner.start()
        joiner.join(JOIN_SECONDS)

    def _join(self) -> None:
        with contextlib.suppress(Exception):
            self._pool.join()

    def _workers(self) -> list[Any]:
        """The pool's worker processes (pebble's own table; empty where it has none)."""
        manager = getattr(getattr(self._pool, "_pool_manager", None), "worker_manager", None)
        workers = getattr(manager, "workers", None)
        return list(workers.values()) if isinstance(workers, dict) else []


def local_process_pool(workers: int) -> LocalProcessPool:
    """The default executor with ``workers`` worker processes (see `LocalProcessPool`)."""
    return LocalProcessPool(workers)


def stop_pool(pool: LocalProcessPool) -> None:
    """Stop a pool made by `local_process_pool`."""
    pool.shutdown()


def run_tasks(
    executor: Executor,
    fn: Callable[..., Any],
    payloads: Sequence[tuple[Any, ...]],
    *,
    stage: str,
    timeout_s: float | None,
    in_flight: int,
    on_done: Callable[[int, Any], None] | None = None,
) -> list[Any]:
    """Run ``fn(*payload)`` for each payload on ``executor``; returns, in order, each
    result or a `TaskFailure` (an exception, a dead worker, a time limit).

    Args:
        executor: where tasks run (see `Executor`).
        fn: a picklable, module-level function.
        payloads: the arguments of each task.
        stage: what the tasks do, for failure reasons (``"compile"``, ``"timing"``).
        timeout_s: the time limit of one task from its start, or None.
        in_flight: how many tasks may be outstanding at once (>= 1).
        on_done: called with (index, result or failure) as each task ends (progress).

    Raises:
        KeyboardInterrupt: after cancelling every outstanding task.
    """
    results: list[Any] = [None] * len(payloads)
    pending = list(range(len(payloads)))
    pending.reverse()
    running: dict[concurrent.futures.Future[Any], tuple[int, float]] = {}

    def finish(index: int, outcome: Any) -> None:
        results[index] = outcome
        if on_done is not None:
            on_done(index, outcome)

    try:
        while pending or running:
            while pending and len(running) < max(1, in_flight):
                index = pending.pop()
                try:
                    future = executor.submit(fn, *payloads[index])
                except Exception as exc:  # a broken executor fails this task, not the search
                    finish(index, TaskFailure(stage, describe_failure(exc), exc))
                    continue
                running[future] = (index, time.monotonic())
            if not running:
                continue
            done, _ = concurrent.futures.wait(
                list(running), timeout=POLL_S, return_when=concurrent.futures.FIRST_COMPLETED
            )
            for future in done:
                index, _started = running.pop(future)
                try:
                    finish(index, future.result())
                except concurrent.futures.CancelledError as exc:
                    finish(index, TaskFailure(stage, "cancelled", exc))
                except Exception as exc:
                    finish(index, TaskFailure(stage, describe_failure(exc), exc))
                except BaseException as exc:
                    # The task's own (a builder calling sys.exit, or raising
                    # KeyboardInterrupt, GeneratorExit or a BaseException of its own, in
                    # its worker) fails that task alone; one raised here (Ctrl-C in this
                    # process) ends the search.
                    if not raised_by_task(future, exc):
                        raise
                    finish(index, TaskFailure(stage, describe_failure(exc), exc))
            if timeout_s is not None:
                now = time.monotonic()
                for future, (index, started) in list(running.items()):
                    if now - started > timeout_s:
                        del running[future]
                        future.cancel()  # kills a local worker; a Ray task is cancelled
                        finish(
                            index,
                            TaskFailure(stage, f"timed out after {timeout_s:g} s (time limit)"),
                        )
    except BaseException:
        for future in running:
            future.cancel()
        raise
    return results


@contextlib.contextmanager
def progress(total: int, what: str) -> Iterator[Callable[[], None]]:
    """A progress bar on a terminal (rich), nothing otherwise; yields ``advance()``."""
    import sys

    if not sys.stderr.isatty():
        yield lambda: None
        return
    from rich.progress import Progress

    with Progress(transient=True) as bar:
        task = bar.add_task(f"autotune: {what}", total=total)
        yield lambda: bar.advance(task)
