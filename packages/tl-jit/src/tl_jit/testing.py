"""TileLang's ``tilelang.testing`` names, for test files ported by changing imports
(``import tl_jit as tilelang``, ``import tl_jit.testing``):

* `main` runs pytest on the calling file (``if __name__ == "__main__":
  tilelang.testing.main()``); `set_random_seed` seeds ``random``, numpy and torch;
  `torch_assert_close` is `tl_jit.utils.tensor.torch_assert_close`.
* ``requires_cuda``, ``requires_rocm``, ``requires_metal``, ``requires_llvm`` are pytest
  marks that skip a test unless a backend serving that target kind is installed and its
  device probe finds a device (`requires_target` for any other kind);
  `requires_cuda_compute_version` and its ``_ge/_gt/_eq/_lt/_le`` forms also compare the
  device's compute version; `requires_package` skips unless the packages import.

The marks probe the device when first looked up, not when this module is imported.
TileLang's performance-regression harness (``process_func``, ``regression``) is not
provided: looking it up raises an ``AttributeError`` that says so.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import random
import sys
from collections.abc import Callable
from typing import Any

from tl_jit.utils.tensor import torch_assert_close

__all__ = [
    "main",
    "requires_cuda_compute_version",
    "requires_cuda_compute_version_eq",
    "requires_cuda_compute_version_ge",
    "requires_cuda_compute_version_gt",
    "requires_cuda_compute_version_le",
    "requires_cuda_compute_version_lt",
    "requires_package",
    "requires_target",
    "set_random_seed",
    "torch_assert_close",
]

_COMPARISONS: dict[str, Callable[[tuple[int, int], tuple[int, int]], bool]] = {
    "ge": lambda have, want: have >= want,
    "gt": lambda have, want: have > want,
    "le": lambda have, want: have <= want,
    "lt": lambda have, want: have < want,
    "eq": lambda have, want: have == want,
}
_KIND_MARKS = {
    "requires_cuda": "cuda",
    "requires_rocm": "rocm",
    "requires_metal": "metal",
    "requires_llvm": "llvm",
}


def main() -> None:
    """Run pytest on the file that called this (and the command line's arguments),
    then exit with pytest's status."""
    import pytest

    caller = inspect.getsourcefile(sys._getframe(1))
    if caller is None:
        raise RuntimeError("tl_jit.testing.main: the calling frame has no source file")
    sys.exit(pytest.main([caller, *sys.argv[1:]]))


def set_random_seed(seed: int = 42) -> None:
    """Seed Python's ``random``, numpy's global generator and torch (when installed)."""
    import numpy as np

    random.seed(seed)
    np.random.seed(seed)
    if importlib.util.find_spec("torch") is not None:
        import torch

        torch.manual_seed(seed)  # every device's generator


@functools.cache
def _device_answer(kind: str) -> tuple[bool, str]:
    """Whether a device for target kind ``kind`` is here, and why not."""
    from tl_backend_api import list_backends

    serving = [b for b in list_backends() if kind in b.target_kinds or kind in b.kind_aliases]
    if not serving:
        return False, f"no installed backend serves target kind {kind!r}"
    if not any(backend.device_present() for backend in serving):
        names = sorted(backend.name for backend in serving)
        return False, f"backends {names} find no {kind!r} device on this machine"
    return True, ""


def requires_target(kind: str) -> Any:
    """A pytest mark that skips a test unless a backend serving target kind ``kind`` is
    installed and finds its device (a host backend always does)."""
    import pytest

    present, reason = _device_answer(kind)
    return pytest.mark.skipif(not present, reason=reason)


@functools.cache
def _compute_version() -> tuple[int, int] | None:
    """The compute version (major, minor) of the first device of target kind cuda."""
    if not _device_answer("cuda")[0]:
        return None
    import tvm

    from tl_backend_api import resolve_target

    try:
        device_type = int(resolve_target("cuda").get_target_device_type())
        text = str(tvm.runtime.device(device_type, 0).compute_version)
        major, minor = text.split(".")[:2]
        return int(major), int(minor)
    except Exception:  # a driver that answers nothing: treated as no device
        return None


def requires_cuda_compute_version(
    major_version: int, minor_version: int = 0, mode: str = "ge"
) -> Callable[[Any], Any]:
    """A decorator that skips a test unless a cuda device is present and its compute
    version compares with ``(major_version, minor_version)`` by ``mode`` (``"ge"``,
    ``"gt"``, ``"le"``, ``"lt"``, ``"eq"``).

    Raises:
        ValueError: ``mode`` is none of those.
    """
    import pytest

    if mode not in _COMPARISONS:
        raise ValueError(f"mode: expected one of {sorted(_COMPARISONS)}, got {mode!r}")
    wanted = (major_version, minor_version)
    have = _compute_version()
    if have is None:
        mark = pytest.mark.skipif(True, reason=_device_answer("cuda")[1] or "no cuda device")
    else:
        mark = pytest.mark.skipif(
            not _COMPARISONS[mode](have, wanted),
            reason=f"requires cuda compute version {mode} {wanted}, the device has {have}",
        )

    def decorate(test: Any) -> Any:
        return mark(test)

    return decorate


def requires_cuda_compute_version_ge(major: int, minor: int = 0) -> Callable[[Any], Any]:
    """`requires_cuda_compute_version` with ``mode="ge"``."""
    return requires_cuda_compute_version(major, minor, "ge")


def requires_cuda_compute_version_gt(major: int, minor: int = 0) -> Callable[[Any], Any]:
    """`requires_cuda_compute_version` with ``mode="gt"``."""
    return requires_cuda_compute_version(major, minor, "gt")


def requires_cuda_compute_version_eq(major: int, minor: int = 0) -> Callable[[Any], Any]:
    """`requires_cuda_compute_version` with ``mode="eq"``."""
    return requires_cuda_compute_version(major, minor, "eq")


def requires_cuda_compute_version_lt(major: int, minor: int = 0) -> Callable[[Any], Any]:
    """`requires_cuda_compute_version` with ``mode="lt"``."""
    return requires_cuda_compute_version(major, minor, "lt")


def requires_cuda_compute_version_le(major: int, minor: int = 0) -> Callable[[Any], Any]:
    """`requires_cuda_compute_version` with ``mode="le"``."""
    return requires_cuda_compute_version(major, minor, "le")


def requires_package(*names: str) -> Any:
    """A pytest mark that skips a test unless every package in ``names`` can be imported."""
    import pytest

    missing = [name for name in names if importlib.util.find_spec(name) is None]
    return pytest.mark.skipif(bool(missing), reason=f"requires the packages {missing}")


def __getattr__(name: str) -> Any:
    if name in _KIND_MARKS:
        return requires_target(_KIND_MARKS[name])
    if name in ("process_func", "regression"):
        raise AttributeError(
            f"tl_jit.testing.{name}: TileLang's performance-regression harness is not "
            "provided; time kernels with tl_jit.profiler.do_bench"
        )
    raise AttributeError(f"module 'tl_jit.testing' has no attribute {name!r}")
