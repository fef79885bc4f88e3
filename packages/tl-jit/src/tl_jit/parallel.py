"""Compiling several kernels at once: threads (lowering releases the GIL and the
compilers are subprocesses) with a progress bar."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from tl_jit.compiler import compile_with_context, create_context
from tl_jit.kernel import JITKernel

__all__ = ["par_compile", "run_parallel"]


def warn_failed(what: str, exc: BaseException) -> None:
    import warnings

    warnings.warn(f"{what}: compile failed: {type(exc).__name__}: {exc}", stacklevel=3)


def run_parallel(
    work: Callable[[Any], JITKernel | None],
    items: Sequence[Any],
    num_workers: int | None,
    ignore_error: bool,
    label: str,
) -> list[JITKernel | None]:
    import os

    from rich.progress import Progress

    if not items:
        return []
    workers = num_workers or max(1, min(len(items), os.cpu_count() or 1))
    results: list[JITKernel | None] = [None] * len(items)
    with (
        concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="tl-par-compile") as pool,
        Progress(transient=True) as progress,
    ):
        task = progress.add_task(f"compiling {label}", total=len(items))
        futures = {pool.submit(work, item): index for index, item in enumerate(items)}
        for future in concurrent.futures.as_completed(futures):
            index = futures[future]
            try:
                results[index] = future.result()
            except Exception as exc:
                if not ignore_error:
                    for other in futures:
                        other.cancel()
                    raise
                warn_failed(f"{label} config {index}", exc)
            progress.advance(task)
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
) -> list[JITKernel | None]:
    """Compile several PrimFuncs in parallel threads with a progress bar (the options are
    `tl_jit.compile`'s, shared by all).

    Returns:
        The kernels in the order of ``funcs`` (None for a failure with ``ignore_error``).

    Raises:
        the first compile error, unless ``ignore_error``.
    """
    functions = list(funcs)
    context = create_context(target, target_host, execution_backend)

    def work(func: Any) -> JITKernel:
        return compile_with_context(
            func, context, out_idx=out_idx, pass_configs=pass_configs, verbose=verbose
        )

    return run_parallel(work, functions, num_workers, ignore_error, "kernels")
