"""The backend's `Backend.is_active` probe: is a Metal device visible to this process?

Cheap and torch-free: it runs for every ``target="auto"``.
"""

from __future__ import annotations

import sys

import tvm


def metal_device_present() -> bool:
    """True on macOS when TVM's runtime sees a Metal device (never elsewhere)."""
    if sys.platform != "darwin":
        return False
    try:
        return bool(tvm.runtime.metal(0).exist)
    except Exception:  # a TVM built without Metal may raise instead of saying no
        return False
