"""Capabilities per CUDA arch, asked through ``backend.supports(name, target)``."""

from __future__ import annotations

import re
from collections.abc import Callable

from tvm.target import Target

#: The arch assumed when the target names none.
DEFAULT_ARCH = "sm_80"


def compute_capability(target: Target) -> int:
    """The target's compute capability as an int (``sm_90a`` -> 90); `DEFAULT_ARCH` if unset."""
    arch = str(target.attrs["arch"]) if "arch" in target.attrs else DEFAULT_ARCH
    match = re.match(r"sm_(\d+)", arch)
    if match is None:
        return int(DEFAULT_ARCH[3:])
    return int(match.group(1))


def target_arch(target: Target) -> str:
    """The ``-arch`` value for nvcc (``sm_90``); `DEFAULT_ARCH` if the target names none."""
    arch = str(target.attrs["arch"]) if "arch" in target.attrs else ""
    return arch if re.fullmatch(r"sm_\d+a?", arch) else DEFAULT_ARCH


def _at_least(capability: int) -> Callable[[Target], bool]:
    def predicate(target: Target) -> bool:
        return compute_capability(target) >= capability

    return predicate


def _hopper_family(target: Target) -> bool:
    return 90 <= compute_capability(target) < 100


#: Feature name -> predicate: tensor cores (mma.sync, sm_70+), cp.async (sm_80+),
#: TMA (sm_90+), wgmma (sm_90 family), fp8 (sm_89+).
FEATURES: dict[str, Callable[[Target], bool]] = {
    "tensor_cores": _at_least(70),
    "async_copy": _at_least(80),
    "tma": _at_least(90),
    "wgmma": _hopper_family,
    "fp8": _at_least(89),
}
