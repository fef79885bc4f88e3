"""The user API: ``jit``, ``compile``, ``lower``, ``JITKernel``, the disk cache, the profiler,
the autotuner and the ``tl`` command line.

``import tl_jit`` is cheap (nothing heavy loads until used): a ``@jit`` kernel
found in the disk cache is loaded through tl-runtime without importing tvm.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tl_runtime.fork_safety import install as _install_fork_safety
from tl_runtime.interrupts import hold_interrupts_while_importing
from tl_runtime.thread_team import apply_default_wait_policy

# First, before tvm (which loads libgomp through torch) can be imported: the OpenMP
# runtime reads OMP_WAIT_POLICY once, when it loads (tl_runtime.thread_team says why).
apply_default_wait_policy()
# A fork while another thread is inside a kernel's first call (lazy imports of tl_ir.eager,
# tvm, a backend) must not leave the child waiting on an import lock (tl_runtime.fork_safety).
_install_fork_safety()
# Ctrl-C during a first call's lazy import of the compiler stack is delivered once that
# import is over: cut short, it would leave registrations behind that fail every later
# import (tl_runtime.interrupts).
hold_interrupts_while_importing("tvm", "tl_ir", "tl_passes", "tl_backend_api")

if TYPE_CHECKING:
    from tl_jit import autotuner, cache, language, layout, profiler, sweep, timing
    from tl_jit import math as math
    from tl_jit.autotuner import AutoTuner, AutotuneWarning, autotune
    from tl_jit.cache import CacheWarning
    from tl_jit.compiler import compile, lower
    from tl_jit.decorator import JITFunction, jit
    from tl_jit.device import get_num_sms
    from tl_jit.env import disable_cache, enable_cache, is_cache_enabled
    from tl_jit.errors import AutotuneError, CacheError, JITError
    from tl_jit.export import export_prim_func
    from tl_jit.kernel import JITKernel
    from tl_jit.math import cdiv, next_power_of_2
    from tl_jit.parallel import par_compile
    from tl_jit.pass_configs import PassConfigKey
    from tl_jit.profiler import Profiler, do_bench
    from tl_jit.tensor_supply import TensorSupplyType

__version__ = "0.1.0"

_LAZY = {
    "compile": ("tl_jit.compiler", "compile"),
    "lower": ("tl_jit.compiler", "lower"),
    "export_prim_func": ("tl_jit.export", "export_prim_func"),
    "par_compile": ("tl_jit.parallel", "par_compile"),
    "jit": ("tl_jit.decorator", "jit"),
    "JITFunction": ("tl_jit.decorator", "JITFunction"),
    "JITKernel": ("tl_jit.kernel", "JITKernel"),
    "autotune": ("tl_jit.autotuner", "autotune"),
    "AutoTuner": ("tl_jit.autotuner", "AutoTuner"),
    "AutotuneWarning": ("tl_jit.autotuner", "AutotuneWarning"),
    "CacheWarning": ("tl_jit.cache", "CacheWarning"),
    "Profiler": ("tl_jit.profiler", "Profiler"),
    "do_bench": ("tl_jit.profiler", "do_bench"),
    "TensorSupplyType": ("tl_jit.tensor_supply", "TensorSupplyType"),
    "JITError": ("tl_jit.errors", "JITError"),
    "CacheError": ("tl_jit.errors", "CacheError"),
    "AutotuneError": ("tl_jit.errors", "AutotuneError"),
    "PassConfigKey": ("tl_jit.pass_configs", "PassConfigKey"),
    "cdiv": ("tl_jit.math", "cdiv"),
    "next_power_of_2": ("tl_jit.math", "next_power_of_2"),
    "get_num_sms": ("tl_jit.device", "get_num_sms"),
    "disable_cache": ("tl_jit.env", "disable_cache"),
    "enable_cache": ("tl_jit.env", "enable_cache"),
    "is_cache_enabled": ("tl_jit.env", "is_cache_enabled"),
    "autotuner": ("tl_jit.autotuner", None),
    "cache": ("tl_jit.cache", None),
    "profiler": ("tl_jit.profiler", None),
    "timing": ("tl_jit.timing", None),
    "sweep": ("tl_jit.sweep", None),
    "language": ("tl_jit.language", None),
    "layout": ("tl_jit.layout", None),
    "testing": ("tl_jit.testing", None),
    "utils": ("tl_jit.utils", None),
    # ``tilelang.DataType(dtype).bits``: TVM's dtype descriptor.
    "DataType": ("tvm", "DataType"),
    # ``tilelang.math.next_power_of_2``; left out of __all__ so that ``from tl_jit import *``
    # does not hide the standard library's math.
    "math": ("tl_jit.math", None),
}


def __getattr__(name: str) -> Any:
    try:
        module_name, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'tl_jit' has no attribute {name!r}") from None
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "AutoTuner",
    "AutotuneError",
    "AutotuneWarning",
    "CacheError",
    "CacheWarning",
    "JITError",
    "JITFunction",
    "JITKernel",
    "PassConfigKey",
    "Profiler",
    "TensorSupplyType",
    "autotune",
    "autotuner",
    "cache",
    "cdiv",
    "compile",
    "disable_cache",
    "do_bench",
    "enable_cache",
    "export_prim_func",
    "get_num_sms",
    "is_cache_enabled",
    "jit",
    "language",
    "layout",
    "lower",
    "next_power_of_2",
    "par_compile",
    "profiler",
    "sweep",
    "timing",
]
