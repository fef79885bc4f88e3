"""TileLang's ``tilelang.testing`` names, for test files ported by changing imports
(``import tl_jit as tilelang``, ``import tl_jit.testing``):

* `main` runs pytest on the calling file (``if __name__ == "__main__":
  tilelang.testing.main()``); `set_random_seed` seeds ``random``, numpy and torch;
  `torch_assert_close` is `tl_jit.utils.tensor.torch_assert_close`.
* ``requires_<kind>`` (TileLang's ``requires_cuda``, ``requires_rocm``,
  ``requires_metal``, ``requires_llvm``; any target kind) is a pytest mark that skips a
  test unless a backend serving that kind is installed and its device probe finds a
  device (`requires_target`); ``requires_<kind>_compute_version(major, minor, mode)``
  and its ``_ge/_gt/_eq/_lt/_le`` forms also compare the first device's compute
  version (`requires_compute_version`); `requires_package` skips unless the packages
  import. The kind is the one the name spells: nothing here names a target.

The marks probe the device when first looked up, not when this module is imported.
TileLang's performance-regression harness (``process_func``, ``regression``) is not
provided: looking it up raises an ``AttributeError`` that says so.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import random
import re
import sys
from collections.abc import Callable
from typing import Any

from tl_jit.utils.tensor import torch_assert_close

__all__ = [
    "main",
    "requires_compute_version",
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
#: ``requires_<kind>_compute_version[_<mode>]``, TileLang's spelling.
_COMPUTE_VERSION = re.compile(r"requires_(\w+?)_compute_version(?:_(ge|gt|le|lt|eq))?")


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
def _compute_version(kind: str) -> tuple[int, int] | None:
    """The compute version (major, minor) of the first device of target kind ``kind``."""
    if not _device_answer(kind)[0]:
        return None
    import tvm

    from tl_backend_api import resolve_target

    try:
        device_type = int(resolve_target(kind).get_target_device_type())
        text = str(tvm.runtime.device(device_type, 0).compute_version)
        major, minor = text.split(".")[:2]
        return int(major), int(minor)
    except Exception:  # a driver (or a device kind) without one: treated as no device
        return None


def requires_compute_version(
    kind: str, major_version: int, minor_version: int = 0, mode: str = "ge"
) -> Callable[[Any], Any]:
    """A decorator that skips a test unless a device of target kind ``kind`` is present
    and its compute version compares with ``(major_version, minor_version)`` by ``mode``
    (``"ge"``, ``"gt"``, ``"le"``, ``"lt"``, ``"eq"``). TileLang spells it
    ``requires_cuda_compute_version(8, 0)`` (and ``_ge``...): available under that name.

    Raises:
        ValueError: ``mode`` is none of those.
    """
    import pytest

    if mode not in _COMPARISONS:
        raise ValueError(f"mode: expected one of {sorted(_COMPARISONS)}, got {mode!r}")
    wanted = (major_version, minor_version)
    have = _compute_version(kind)
    if have is None:
        reason = _device_answer(kind)[1] or f"no {kind!r} device reports a compute version"
        mark = pytest.mark.skipif(True, reason=reason)
    else:
        mark = pytest.mark.skipif(
            not _COMPARISONS[mode](have, wanted),
            reason=f"requires {kind} compute version {mode} {wanted}, the device has {have}",
        )

    def decorate(test: Any) -> Any:
        return mark(test)

    return decorate


def requires_package(*names: str) -> Any:
    """A pytest mark that skips a test unless every package in ``names`` can be imported."""
    import pytest

    missing = [name for name in names if importlib.util.find_spec(name) is None]
    return pytest.mark.skipif(bool(missing), reason=f"requires the packages {missing}")


def __getattr__(name: str) -> Any:
    if name in ("process_func", "regression"):
        raise AttributeError(
            f"tl_jit.testing.{name}: TileLang's performance-regression harness is not "
            "provided; time kernels with tl_jit.profiler.do_bench"
        )
    found = _COMPUTE_VERSION.fullmatch(name)
    if found is not None:
        kind, fixed_mode = found.group(1), found.group(2)
        if fixed_mode is None:
            return functools.partial(requires_compute_version, kind)

        def compare(major: int, minor: int = 0) -> Callable[[Any], Any]:
            return requires_compute_version(kind, major, minor, fixed_mode)

        return compare
    if name.startswith("requires_") and name[len("requires_") :].isidentifier():
        return requires_target(name[len("requires_") :])
    raise AttributeError(f"module 'tl_jit.testing' has no attribute {name!r}")
