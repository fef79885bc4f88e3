"""Compiling several kernels at once: threads (lowering releases the GIL and the
compilers are subprocesses) or a caller's executor, with a progress bar."""

from __future__ import annotations

import concurrent.futures
import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from tl_jit.compiler import compile_with_context, create_context
from tl_jit.kernel import JITKernel
from tl_jit.pass_configs import check_verbose
from tl_jit.tune_executor import raised_by_task

__all__ = ["moves_work_elsewhere", "par_compile", "run_parallel"]


def warn_failed(what: str, exc: BaseException) -> None:
    import warnings

    warnings.warn(f"{what}: compile failed: {type(exc).__name__}: {exc}", stacklevel=3)


def moves_work_elsewhere(executor: object) -> bool:
    """Whether ``executor`` runs tasks in other processes (so their arguments are pickled):
    a process pool, or an executor saying so with ``ships_work = True``."""
    return isinstance(executor, concurrent.futures.ProcessPoolExecutor) or bool(
        getattr(executor, "ships_work", False)
    )


@contextlib.contextmanager
def _thread_pool_or(executor: Any, workers: int) -> Iterator[Any]:
    if executor is not None:
        yield executor
        return
    with concurrent.futures.ThreadPoolExecutor(
        workers, thread_name_prefix="tl-par-compile"
    ) as pool:
        yield pool


def run_parallel(
    work: Callable[..., Any],
    items: Sequence[Any],
    num_workers: int | None,
    ignore_error: bool,
    label: str,
    executor: Any = None,
    finish: Callable[[Any], JITKernel | None] | None = None,
) -> list[JITKernel | None]:
    """Run ``work(item)`` for every item on threads (or ``executor``), with a progress bar.

    Args:
        work: what to run per item (picklable when ``executor`` moves work elsewhere).
        items: the items.
        num_workers: threads of the default pool.
        ignore_error: a failing item gives None and a warning instead of raising.
        label: what the progress bar and warnings name.
        executor: an object with ``submit(fn, *args) -> Future``; default: threads.
        finish: turns a task's result into the kernel (run here, e.g. installing a
            shipped artifact); default: the result is the kernel.

    Returns:
        The kernels in the order of ``items`` (None for a failure with ``ignore_error``).

    Raises:
        the first error, unless ``ignore_error``; KeyboardInterrupt after cancelling
        the outstanding tasks.
    """
    import os

    from rich.progress import Progress

    if not items:
        return []
    workers = num_workers or max(1, min(len(items), os.cpu_count() or 1))
    results: list[JITKernel | None] = [None] * len(items)
    with _thread_pool_or(executor, workers) as pool, Progress(transient=True) as progress:
        task = progress.add_task(f"compiling {label}", total=len(items))
        futures = {pool.submit(work, item): index for index, item in enumerate(items)}
        try:
            for future in concurrent.futures.as_completed(futures):
                index = futures[future]
                try:
                    result = future.result()
                    results[index] = finish(result) if finish is not None else result
                except Exception as exc:
                    if not ignore_error:
                        raise
                    warn_failed(f"{label} config {index}", exc)
                except BaseException as exc:
                    # A task's own sys.exit() (any BaseException it raised) is one more
                    # failure; Ctrl-C here is not.
                    if not ignore_error or not raised_by_task(future, exc):
                        raise
                    warn_failed(f"{label} config {index}", exc)
                progress.advance(task)
        except BaseException:
            for other in futures:
                other.cancel()
            raise
    return results


def par_compile(
    funcs: Iterable[Any],
    out_idx: Any = None,
    target: object = "auto",
    target_host: object = None,
    execution_backend: str = "auto",
    pass_configs: Mapping[str, object] | None = None,
    verbose: bool = False,
    num_workers: int | None = None,
    ignore_error: bool = False,
    executor: Any = None,
) -> list[JITKernel | None]:
    """Compile several PrimFuncs in parallel threads with a progress bar (the options are
    `tl_jit.compile`'s, shared by all).

    Args:
        executor: an in-process executor (``submit(fn, *args) -> Future``, e.g. a
            ``ThreadPoolExecutor``) to compile on instead of this function's threads.
            PrimFuncs do not leave the process: to build on worker processes or a Ray
            cluster, give a jit function's configurations to
            ``jit_function.par_compile(configs, executor=...)`` or `tl_jit.autotune`.

    Returns:
        The kernels in the order of ``funcs`` (None for a failure with ``ignore_error``).

    Raises:
        TypeError: ``funcs`` is not a list of PrimFuncs (a lone PrimFunc, say);
            ``verbose`` is not a bool; ``executor`` has no ``submit``, or runs tasks in
            other processes.
        the first compile error, unless ``ignore_error``.
    """
    check_verbose(verbose, "par_compile verbose")
    if executor is not None:
        if not callable(getattr(executor, "submit", None)):
            raise TypeError(
                "par_compile executor: expected an object with submit(fn, *args) returning a "
                f"concurrent.futures.Future, got {executor!r}"
            )
        if moves_work_elsewhere(executor):
            raise TypeError(
                f"par_compile executor: {type(executor).__name__} runs tasks in other "
                "processes, and a PrimFunc cannot be sent there; pass a thread pool, or "
                "give a @jit function's configurations to its .par_compile(configs, "
                "executor=...) (or tl_jit.autotune) so that workers build them"
            )
    if not isinstance(funcs, Iterable) or isinstance(funcs, str | bytes):
        raise TypeError(
            f"par_compile funcs: expected a list of PrimFuncs, got a {type(funcs).__name__} "
            "(for one kernel, pass [func] or call tl_jit.compile)"
        )
    functions = list(funcs)
    from tvm.tirx import PrimFunc

    for position, func in enumerate(functions):
        if not isinstance(func, PrimFunc):
            raise TypeError(
                f"par_compile funcs[{position}]: expected a PrimFunc, got a {type(func).__name__}"
            )
    context = create_context(target, target_host, execution_backend)

    def work(func: Any) -> JITKernel:
        return compile_with_context(
            func, context, out_idx=out_idx, pass_configs=pass_configs, verbose=verbose
        )

    return run_parallel(work, functions, num_workers, ignore_error, "kernels", executor)
