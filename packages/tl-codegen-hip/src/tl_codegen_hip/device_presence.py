"""The backend's `Backend.is_active` probe: is an AMD GPU visible to this process?

Cheap and torch-free: it runs for every ``target="auto"``.
"""

from __future__ import annotations

import glob
import os

import tvm


def rocm_device_present() -> bool:
    """True when TVM's runtime sees a ROCm device, or the kernel driver's nodes exist
    (``/dev/kfd`` and a render node), for a TVM built without ROCm."""
    try:
        if bool(tvm.runtime.rocm(0).exist):
            return True
    except Exception:  # a TVM built without ROCm may raise instead of saying no
        pass
    return os.path.exists("/dev/kfd") and bool(glob.glob("/dev/dri/renderD*"))
