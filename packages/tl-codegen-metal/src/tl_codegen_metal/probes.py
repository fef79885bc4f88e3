"""Availability probe of the metal execution backend ``torch``."""

from __future__ import annotations

import importlib.util

from tl_runtime import adapter_availability


def torch_mps_available() -> bool:
    """True when tl_runtime's torch adapter can run and torch sees an MPS (Metal) device.

    The adapter is asked first (it reports unavailable until its Metal
    launcher is written), so torch is imported only when it could matter.
    """
    if not adapter_availability("torch").available:
        return False
    if importlib.util.find_spec("torch") is None:
        return False
    torch = importlib.import_module("torch")
    return bool(torch.backends.mps.is_available())


def always() -> bool:
    """The source-only spec's probe: generating MSL needs nothing."""
    return True
