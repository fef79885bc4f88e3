"""The backend's `Backend.is_active` probe: is an NVIDIA GPU visible to this process?

Cheap and torch-free: it runs for every ``target="auto"``.
"""

from __future__ import annotations

import glob
import os

import tvm


def cuda_device_present() -> bool:
    """True when a CUDA device is visible (``CUDA_VISIBLE_DEVICES`` empty or ``-1`` hides all).

    Asks TVM's runtime first; a TVM built without CUDA may raise or say no
    while a device is present, so the driver's device nodes count too.
    """
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return False
    try:
        if bool(tvm.runtime.cuda(0).exist):
            return True
    except Exception:  # a TVM built without CUDA may raise instead of saying no
        pass
    return bool(glob.glob("/dev/nvidia[0-9]*"))
