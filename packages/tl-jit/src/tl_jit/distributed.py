"""Compiling and timing configurations on a Ray cluster (optional: ``pip install
tl-jit[ray]``; docs/autotune.md).

`RayExecutor` is an executor for ``tl_jit.autotune(..., executor=...)`` and
``par_compile(..., executor=...)``: each configuration is built by a Ray task (on any
node with a free CPU), its artifact comes back as bytes, is verified (manifest, every
file's sha256, the ir key it records) and installed in this process's disk cache, so the
winner is an ordinary cached kernel. With ``device_options`` the kernels are also timed
by Ray tasks placed on workers that own the device (``{"num_gpus": 1}``, or a custom
resource such as ``{"resources": {"H200": 1}}``). A task that raises, whose worker dies
or whose node is lost fails its configuration alone; ``KeyboardInterrupt`` cancels every
outstanding task. Importing this module does not import Ray; creating an executor does.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["RayExecutor", "RayFuture"]


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ImportError(
            "tl_jit.distributed.RayExecutor needs Ray: pip install 'tl-jit[ray]' (or ray)"
        ) from None
    return ray


class RayFuture(concurrent.futures.Future[Any]):
    """The future of one Ray task; ``cancel()`` cancels the task (killing its worker if it
    runs), whatever state it is in."""

    def __init__(self, ray: Any, ref: Any) -> None:
        super().__init__()
        self._ray = ray
        self.ref = ref

    def cancel(self) -> bool:
        """Cancel the Ray task (force: a running task's worker is killed); True unless the
        task had already finished."""
        if self.done():
            return super().cancel()
        # An error here means the task already finished or its owner is gone.
        with contextlib.suppress(Exception):
            self._ray.cancel(self.ref, force=True)
        return super().cancel()


class RayExecutor:
    """An autotuning executor on a Ray cluster.

    Args:
        address: the cluster to connect to when Ray is not initialized yet (``"auto"``, a
            ``ray://`` address); None means ``$RAY_ADDRESS`` when that is set (as under
            ``ray job submit``) and otherwise a new local cluster of this process's own,
            never whichever cluster another process last started on this machine (plain
            ``ray.init()`` joins that one, and then refuses ``init_options`` such as
            ``num_cpus``). Ignored when Ray is initialized.
        compile_options: Ray task options of a build (default ``{"num_cpus": 1,
            "max_retries": 0}``: a build whose worker dies is not retried, it fails its
            configuration).
        device_options: Ray task options that place a timing task on a worker owning the
            device (``{"num_gpus": 1}``, ``{"resources": {"H200": 1}}``); None times the
            kernels in the calling process.
        max_workers: how many tasks the autotuner keeps in flight (default: the cluster's
            CPU count).
        init_options: keyword arguments of ``ray.init`` when this creates the connection.

    Raises:
        ImportError: Ray is not installed.
        TypeError: an options argument is not a dict.
    """

    ships_work = True
    """Tasks run in other processes (their arguments are pickled)."""

    def __init__(
        self,
        *,
        address: str | None = None,
        compile_options: Mapping[str, Any] | None = None,
        device_options: Mapping[str, Any] | None = None,
        max_workers: int | None = None,
        init_options: Mapping[str, Any] | None = None,
    ) -> None:
        for name, value in (
            ("compile_options", compile_options),
            ("device_options", device_options),
            ("init_options", init_options),
        ):
            if value is not None and not isinstance(value, Mapping):
                raise TypeError(f"RayExecutor {name}: expected a dict, got {value!r}")
        if max_workers is not None and (not isinstance(max_workers, int) or max_workers < 1):
            raise ValueError(f"RayExecutor max_workers: expected an int >= 1, got {max_workers!r}")
        ray = _import_ray()
        if not ray.is_initialized():
            if address is None:
                address = os.environ.get("RAY_ADDRESS") or "local"
            ray.init(address=address, **dict(init_options or {}))
        self._ray = ray
        self.compile_options = {"num_cpus": 1, "max_retries": 0, **dict(compile_options or {})}
        self.device_options = (
            None
            if device_options is None
            else {"num_cpus": 1, "max_retries": 0, **dict(device_options)}
        )
        self.max_workers = max_workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._remotes: dict[tuple[Callable[..., Any], str], Any] = {}
        self._outstanding: set[RayFuture] = set()
        self._lock = threading.Lock()
        # Timing on device workers is offered only when a device placement is given.
        self.submit_on_device: Callable[..., concurrent.futures.Future[Any]] | None = (
            self._submit_on_device if self.device_options is not None else None
        )

    def _remote(self, fn: Callable[..., Any], options: Mapping[str, Any]) -> Any:
        key = (fn, repr(sorted(options.items())))
        with self._lock:
            remote = self._remotes.get(key)
            if remote is None:
                remote = self._ray.remote(fn).options(**options)
                self._remotes[key] = remote
        return remote

    def _submit(
        self, fn: Callable[..., Any], args: tuple[Any, ...], options: Mapping[str, Any]
    ) -> RayFuture:
        ref = self._remote(fn, options).remote(*args)
        future = RayFuture(self._ray, ref)
        with self._lock:
            self._outstanding.add(future)

        def settle(inner: concurrent.futures.Future[Any]) -> None:
            with self._lock:
                self._outstanding.discard(future)
            if future.done():  # cancelled meanwhile
                return
            try:
                result = inner.result()
            except BaseException as exc:
                # A task that raised: report the task's own exception, not Ray's wrapper.
                cause = getattr(exc, "cause", None)
                future.set_exception(cause if isinstance(cause, BaseException) else exc)
            else:
                future.set_result(result)

        ref.future().add_done_callback(settle)
        return future

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> RayFuture:
        """Run ``fn(*args)`` as a Ray task with ``compile_options``; returns its future."""
        return self._submit(fn, args, self.compile_options)

    def _submit_on_device(self, fn: Callable[..., Any], /, *args: Any) -> RayFuture:
        """Run ``fn(*args)`` as a Ray task on a worker owning the device."""
        assert self.device_options is not None
        return self._submit(fn, args, self.device_options)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Cancel outstanding tasks when ``cancel_futures``; wait for the rest when
        ``wait``. The Ray connection stays (``ray.shutdown()`` ends it)."""
        with self._lock:
            outstanding = list(self._outstanding)
        if cancel_futures:
            for future in outstanding:
                future.cancel()
        elif wait:
            concurrent.futures.wait(outstanding)

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown(wait=exc_info[0] is None, cancel_futures=exc_info[0] is not None)
