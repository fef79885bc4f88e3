"""What each CUDA arch offers: the feature predicates the cuda lowering consults (through
its `GpuTraits`) and the `Capabilities` record the core reads (`cuda_capabilities`)."""

from __future__ import annotations

import re
from collections.abc import Callable

from tvm.target import Target

from tl_backend_api import Capabilities

#: The arch assumed when the target names none (or one nvcc no longer supports).
DEFAULT_ARCH = "sm_80"
#: The oldest arch current nvcc (CUDA 13) compiles for. TVM gives ``cuda`` targets
#: ``sm_50`` when it cannot detect a GPU, which counts as "no arch named".
OLDEST_SUPPORTED = 75


def compute_capability(target: Target) -> int:
    """The target's compute capability as an int (``sm_90a`` -> 90); `DEFAULT_ARCH` if unset."""
    arch = str(target.attrs["arch"]) if "arch" in target.attrs else DEFAULT_ARCH
    match = re.match(r"sm_(\d+)", arch)
    if match is None:
        return int(DEFAULT_ARCH[3:])
    return int(match.group(1))


def target_arch(target: Target) -> str | None:
    """The ``-arch`` value for nvcc (``sm_90``), or None when the target names no arch
    nvcc supports (then the build embeds PTX for `DEFAULT_ARCH`, which newer GPUs JIT)."""
    arch = str(target.attrs["arch"]) if "arch" in target.attrs else ""
    match = re.fullmatch(r"sm_(\d+)a?", arch)
    if match is None or int(match.group(1)) < OLDEST_SUPPORTED:
        return None
    return arch


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


#: The float dtypes every supported arch computes in; fp8 and narrower formats need sm_89.
_BELOW_FP8 = Capabilities(float_dtypes=frozenset({"float16", "bfloat16", "float32", "float64"}))
_ANY_FLOAT = Capabilities()


def cuda_capabilities(target: Target) -> Capabilities:
    """The `Backend.capabilities` of the cuda backend: below sm_89 (no fp8 arithmetic or
    conversions) the float dtypes are fp16, bf16, fp32 and fp64; from sm_89 on, any."""
    return _ANY_FLOAT if FEATURES["fp8"](target) else _BELOW_FP8
