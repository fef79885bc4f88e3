"""Device queries TileLang programs make while choosing sizes (``driver.get_num_sms()``)."""

from __future__ import annotations

import os

_DLPACK_CPU = 1


def get_num_sms(device_id: int = 0, target: object = "auto") -> int:
    """The number of compute units kernels for ``target`` spread their blocks over.

    On a GPU that is the device's multiprocessor count (SMs on NVIDIA, CUs on AMD); on
    a CPU target it is the number of cores this process may run on, the CPU
    backends' counterpart (blocks run in parallel across cores). Persistent and
    stream-k kernels size their grids with it.

    Args:
        device_id: which device of the target's kind (ignored on the CPU).
        target: a target as `tl_jit.compile` takes it (``"auto"``: ``TL_TARGET`` or the
            detected one).

    Raises:
        TypeError: ``device_id`` is not a non-negative int.
        RuntimeError: the device cannot be queried (no such device or driver).
        tl_backend_api.BackendError: the target cannot be resolved.
    """
    if isinstance(device_id, bool) or not isinstance(device_id, int) or device_id < 0:
        raise TypeError(f"device_id: expected an int >= 0, got {device_id!r}")
    from tl_jit.compiler import create_context

    context = create_context(target, None, "auto")
    import tvm

    kind = str(context.target.kind.name)
    device_type = int(context.target.get_target_device_type())
    if device_type == _DLPACK_CPU:
        if hasattr(os, "sched_getaffinity"):
            return len(os.sched_getaffinity(0))
        return os.cpu_count() or 1
    device = tvm.runtime.device(device_type, device_id)
    try:
        count = device.multi_processor_count
    except Exception as exc:  # tvm raises its own error types when no driver is loaded
        raise RuntimeError(
            f"get_num_sms: cannot query device {device_id} of target kind {kind!r}: {exc}"
        ) from None
    if not count:
        raise RuntimeError(
            f"get_num_sms: device {device_id} of target kind {kind!r} is not present "
            "(no driver or no such device)"
        )
    return int(count)
